"""Module-level functions for test_custom_rules, test_pytrees, test_jacobians, test_cache.

s2s reads function source with inspect, so everything under test lives here
(at module level).  Custom rules are registered at import time; their names
are prefixed `fx_` so they cannot collide with rules other test modules define.
"""
from __future__ import annotations

import collections
import dataclasses

import numpy as np

import s2s

# ===========================================================================
# Custom rules
# ===========================================================================

# --- custom_vjp: a gradient clipper (identity forward, clipped backward) ----


@s2s.custom_vjp
def fx_clip_gradient(x):
    return x


def fx_clip_gradient_fwd(x):
    return x, None


def fx_clip_gradient_bwd(res, g):
    return (np.clip(g, -0.5, 0.5),)


fx_clip_gradient.defvjp(fx_clip_gradient_fwd, fx_clip_gradient_bwd)


def uses_clip(x):
    # true derivative of sum(3 x) is 3; the clipped rule gives 0.5 after the x3 scale
    return np.sum(fx_clip_gradient(x * 3.0))


def uses_clip_twice(x):
    # the cotangent reaching the clipper is 2 (from the 2.0 *), clipped to 0.5, then x x
    y = fx_clip_gradient(np.sin(x))
    return np.sum(2.0 * y) + np.sum(x * x)


# --- custom_vjp: sin whose backward rule is scaled by 10 (uses residuals) ---


@s2s.custom_vjp
def fx_scaled_sin(x):
    return np.sin(x)


def fx_scaled_sin_fwd(x):
    return np.sin(x), np.cos(x)


def fx_scaled_sin_bwd(cos_x, g):
    return (10.0 * g * cos_x,)


fx_scaled_sin.defvjp(fx_scaled_sin_fwd, fx_scaled_sin_bwd)


def uses_scaled_sin(x):
    return np.sum(fx_scaled_sin(x) ** 2)


def uses_scaled_sin_vec(x):
    return fx_scaled_sin(x) * 2.0


# --- custom_vjp with two arguments (deliberately "wrong" cotangents) --------


@s2s.custom_vjp
def fx_mul2(x, y):
    return x * y


def fx_mul2_fwd(x, y):
    return x * y, (x, y)


def fx_mul2_bwd(res, g):
    x, y = res
    return (2.0 * g * y, 3.0 * g * x)   # true rule: (g * y, g * x)


fx_mul2.defvjp(fx_mul2_fwd, fx_mul2_bwd)


def uses_mul2(x, y):
    return np.sum(fx_mul2(x, y))


# --- custom_vjp whose bwd returns the wrong number of cotangents -----------


@s2s.custom_vjp
def fx_bad_arity(x, y):
    return x + y


def fx_bad_arity_fwd(x, y):
    return x + y, None


def fx_bad_arity_bwd(res, g):
    return (g,)      # one cotangent for two inputs


fx_bad_arity.defvjp(fx_bad_arity_fwd, fx_bad_arity_bwd)


def uses_bad_arity(x, y):
    return np.sum(fx_bad_arity(x, y))


@s2s.custom_vjp
def fx_bad_not_tuple(x):
    return x * 1.0


def fx_bad_not_tuple_fwd(x):
    return x * 1.0, None


def fx_bad_not_tuple_bwd(res, g):
    return g         # a bare array, not a tuple


fx_bad_not_tuple.defvjp(fx_bad_not_tuple_fwd, fx_bad_not_tuple_bwd)


def uses_bad_not_tuple(x):
    return np.sum(fx_bad_not_tuple(x))


# --- custom_jvp: cube whose rule says 2 x t (true derivative: 3 x^2 t) -------


@s2s.custom_jvp
def fx_cube(x):
    return x ** 3


@fx_cube.defjvp
def fx_cube_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return fx_cube(x), 2.0 * x * t


def uses_cube(x):
    return fx_cube(x)


def uses_cube_sum(x):
    return np.sum(fx_cube(x))


# --- custom_jvp with two arguments: softplus-weighted product --------------


@s2s.custom_jvp
def fx_wsum(x, w):
    return x * w


@fx_wsum.defjvp
def fx_wsum_jvp(primals, tangents):
    x, w = primals
    tx, tw = tangents
    # deliberately not the product rule: 5 w tx + 7 x tw
    return fx_wsum(x, w), 5.0 * w * tx + 7.0 * x * tw


def uses_wsum(x, w):
    return fx_wsum(x, w)


def uses_wsum_sum(x, w):
    return np.sum(fx_wsum(x, w))


# --- s2s.adjoint / s2s.tangent templates -----------------------------------


def fx_square(x):
    return x * x


def fx_marker_scale(x):
    """Helper the adjoint template calls: 4 x (true derivative of x*x: 2 x)."""
    return 4.0 * x


@s2s.adjoint(fx_square)
def _fx_square_adjoint(y, x):
    d[x] = d[y] * fx_marker_scale(x)  # noqa: F821


@s2s.tangent(fx_square)
def _fx_square_tangent(y, x):
    t[y] = t[x] * 6.0 * x  # noqa: F821  (true derivative: 2 x)


def uses_fx_square(x):
    return np.sum(fx_square(x))


def uses_fx_square_vec(x):
    return fx_square(x)


# --- stop_gradient ------------------------------------------------------------


def sg_product(x):
    # d/dx sum(x * sg(x)) = sg(x) = x
    return np.sum(x * s2s.stop_gradient(x))


def sg_only(x):
    return np.sum(s2s.stop_gradient(x) ** 2)


def sg_mixed(x, y):
    # gradient w.r.t. y flows; the stopped x branch contributes nothing
    return np.sum(np.sin(s2s.stop_gradient(x)) * y + x * y)


def sg_elementwise(x):
    return x * s2s.stop_gradient(x)


# ===========================================================================
# Pytrees
# ===========================================================================

Params = collections.namedtuple("Params", ["W", "b"])


@dataclasses.dataclass
class DenseParams:
    W: np.ndarray
    b: np.ndarray


def loss_dict(params, x):
    h = np.tanh(x @ params["W"] + params["b"])
    return np.sum(h * h)


def loss_mlp(params, x):
    h = x
    for W, b in params:
        h = np.tanh(h @ W + b)
    return np.sum(h * h)


def loss_namedtuple(p, x):
    return np.sum(np.sin(x @ p.W + p.b) ** 2)


def loss_dataclass(p, x):
    z = x @ p.W + p.b
    return np.sum(np.log1p(np.exp(z)))


def loss_items(params, x):
    total = 0.0
    for name, value in params.items():
        total = total + np.sum(value * value) * x
    return total


def loss_nested(tree, x):
    enc = tree["enc"]
    h = np.tanh(x @ enc[0] + enc[1])
    return np.sum(h * tree["dec"]["scale"]) + np.sum(tree["dec"]["bias"] ** 2)


def loss_with_state(params, state, x):
    z = (x - state["mean"]) / state["std"]
    return np.sum((z @ params["W"] + params["b"]) ** 2)


def loss_aux(params, x):
    pred = x @ params["W"] + params["b"]
    loss = np.sum(pred * pred)
    return loss, {"pred": pred, "n": 3}


def loss_two_trees(p, q):
    return np.sum(p["a"] * q[0]) + np.sum(np.exp(q[1]))


# ===========================================================================
# Jacobians: R^n -> R^m
# ===========================================================================

A_CONST = np.array([[0.5, -1.0, 2.0],
                    [1.5, 0.3, -0.7],
                    [-0.2, 0.8, 1.1],
                    [0.9, -0.4, 0.6]])


def j_sin(x):
    return np.sin(x)


def j_exp_times_x(x):
    return np.exp(x) * x


def j_poly(x):
    return x ** 3 - 2.0 * x + 1.0


def j_tanh_chain(x):
    return np.tanh(np.sin(x) * 2.0 + np.cos(x))


def j_matvec(x):
    return A_CONST @ x


def j_gram(X):
    return X.T @ X


def j_sum_axis0(X):
    return np.sum(X * X, axis=0)


def j_mean_axis1(X):
    return np.mean(np.sin(X), axis=1)


def j_max_axis0(X):
    return np.max(X, axis=0)


def j_prod_axis1(X):
    return np.prod(X, axis=1)


def j_softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def j_normalize(x):
    return x / np.sqrt(np.sum(x * x))


def j_loop(x):
    y = x
    for i in range(3):
        y = y * x + 0.5 * i
    return y


def j_loop_selfmul(x):
    # returns the loop variable itself (no reduction after the loop): y = x^4
    y = x
    for _ in range(3):
        y = y * x
    return y


def j_while(x):
    y = x
    k = 0
    while k < 3:
        y = np.sin(y) + x
        k = k + 1
    return y


def j_branch(x):
    if np.sum(x) > 0:
        y = x ** 2
    else:
        y = -3.0 * x
    return y


def j_index_write(x):
    y = np.zeros(4)
    y[0] = x[1] * x[2]
    y[1:] = x * x
    return y


def j_index_accumulate(x):
    y = np.zeros(3)
    for i in range(3):
        y[i] += x[i] * x[i + 1]
    return y


def j_slices(x):
    return x[::2] * x[1::2]


def j_where(x):
    return np.where(x > 0, x * x, 0.1 * x)


def j_maximum(x):
    return np.maximum(x, 0.5) * x


def j_reshape_transpose(x):
    return np.transpose(np.reshape(x, (2, 3))) * 2.0


def j_scalar_out(x):
    return np.sum(x * x * x)


def j_log_sqrt(x):
    return np.log(x) + np.sqrt(x)


def j_dot_scale(x):
    return np.dot(x, x) * x


B_VEC = np.array([1.0, -2.0])


def j_matrix_in_vector_out(X):
    return X @ B_VEC


def j_array_literal(x):
    # a constant built inside the function: needs no derivative of its own
    return x * np.array([1.0, -2.0, 0.5])


def j_two_args(x, y):
    return np.sin(x) * y[0] + x * y[1]


def j_int_power(x, n):
    return x ** n * 2.0


def j_int_loop(x, n):
    y = x
    for _ in range(n):
        y = y * x
    return y


# ===========================================================================
# Hessians: R^n -> R
# ===========================================================================

H_MAT = np.array([[2.0, 0.5, -1.0],
                  [0.3, 1.0, 0.2],
                  [-0.4, 0.7, 3.0]])


def h_quadratic(x):
    return 0.5 * (x @ (H_MAT @ x))


def h_sum_cube(x):
    return np.sum(x ** 3)


def h_logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def h_rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def h_loop(x):
    s = 0.0
    for i in range(1, 4):
        s = s + np.sum(np.sin(x * i)) / i
    return s


def h_branch(x):
    if np.sum(x) > 0:
        return np.sum(np.exp(x) * x)
    return np.sum(np.cos(x))


def h_while(x):
    y = x
    k = 0
    while k < 3:
        y = np.tanh(y) * x
        k = k + 1
    return np.sum(y)


def h_softplus(x):
    return np.sum(np.log1p(np.exp(x)))


def h_norm(x):
    return np.sqrt(np.sum(x * x) + 1.0)


def h_product(x):
    return x[0] * x[1] * x[2] + x[0] * x[0]


def h_mlp(x):
    h = np.tanh(A_CONST @ x)
    return np.sum(h * h)


def h_two_args(x, y):
    return np.sum(np.sin(x) * y * y) + np.sum(x * x * y)


# ===========================================================================
# Cache
# ===========================================================================


def cache_fn_a(x):
    return np.sum(np.sin(x) * x)


def cache_fn_b(x):
    return np.sum(np.cos(x) * x * x)


def cache_fn_c(x):
    return np.sum(np.exp(x) - x)


def cache_fn_d(x):
    return np.sum(np.tanh(x) ** 2)


def cache_fn_log(x, s):
    return np.sum(np.log(s) * x)


def cache_long(x, w):
    """A 100+ line function: a long elementwise chain, a loop and branches."""
    a = x * w
    b = np.sin(a)
    c = b * x
    d = np.cos(c) + a
    e = d * d
    f = e - b
    g = np.tanh(f)
    h = g * w + x
    i1 = np.exp(-h * h)
    j = i1 + c
    k = j * 0.5
    m = k - d * 0.1
    n = np.sqrt(m * m + 1.0)
    o = n * x
    p = np.log1p(o * o)
    q = p + b
    r = q * q
    s = r - a
    t = np.sin(s) * 0.3
    u = t + k
    v = u * w
    w2 = np.cos(v)
    z = w2 + u
    a1 = z * 1.1
    b1 = a1 - x
    c1 = np.tanh(b1)
    d1 = c1 * c1
    e1 = d1 + a1 * 0.01
    f1 = np.exp(-e1)
    g1 = f1 * z
    h1 = g1 + 2.0
    i2 = np.log(h1)
    j1 = i2 * b1
    k1 = j1 - 0.25 * c1
    m1 = np.sin(k1)
    n1 = m1 * w + x
    o1 = n1 * n1
    p1 = o1 / (1.0 + o1)
    q1 = p1 + m1
    r1 = q1 * 0.9
    s1 = np.arctan(r1)
    t1 = s1 + q1
    u1 = t1 * t1
    v1 = u1 - s1
    acc = v1
    for it in range(4):
        acc = acc * 0.8 + np.sin(acc) * 0.1
        acc = acc + x * 0.05
        if it % 2 == 0:
            acc = acc - 0.01 * acc * acc
        else:
            acc = acc + 0.02 * w
    if np.sum(acc) > 0:
        acc = acc * 1.5
        extra = np.tanh(acc)
    else:
        acc = acc * 0.5
        extra = np.sin(acc)
    a2 = acc + extra
    b2 = a2 * a2
    c2 = np.sqrt(b2 + 1.0)
    d2 = c2 - a2
    e2 = d2 * x
    f2 = np.exp(-e2 * e2)
    g2 = f2 + d2
    h2 = g2 * w
    i3 = np.sin(h2)
    j2 = i3 + g2
    k2 = j2 * 0.7
    m2 = np.cos(k2)
    n2 = m2 * m2
    o2 = n2 + k2
    p2 = o2 * x
    q2 = np.tanh(p2)
    r2 = q2 + o2
    s2 = r2 * 0.3
    t2 = s2 - q2 * 0.2
    u2 = np.exp(t2 * 0.1)
    v2 = u2 * r2
    if np.max(v2) > 10.0:
        v2 = v2 * 0.1
    elif np.max(v2) > 1.0:
        v2 = v2 * 0.5
    else:
        v2 = v2 * 2.0
    a3 = v2 + t2
    b3 = a3 * a3
    c3 = np.log1p(b3)
    d3 = c3 * w
    e3 = d3 + x
    f3 = np.sin(e3)
    g3 = f3 * e3
    h3 = g3 - c3
    i4 = h3 * h3
    j3 = i4 + 1.0
    k3 = np.sqrt(j3)
    m3 = k3 * a3
    n3 = m3 + g3
    o3 = np.tanh(n3)
    p3 = o3 * 2.0
    q3 = p3 + n3 * 0.01
    r3 = q3 * q3
    s3 = r3 + e1
    t3 = s3 * 0.5
    return np.sum(t3) + np.sum(v1 * 0.01)
