"""Transforms at their edges: empty vmap batches, vmap(grad) refusals, pytree jvp/jacfwd, pmap in grad.

1. vmap over a batch of no examples returns the empty result whose shape and dtype are those of a
   loop over examples stacking what a one-example call gives (np.stack of zero such rows), for a
   branch, a while loop and an op with no array form, under vmap, vmap(grad), jit(vmap) and
   jit(vmap(grad));
2. vmap(grad(f)) (jitted or not) of int, bool or complex examples raises grad's own error (same
   class, same message); float examples still give the loop of grads;
3. jvp and jacfwd (and jacrev) with tuple, list and dict primals (pytrees, as JAX): jvp against the
   jvp of the same function written on the leaves and against central differences; Jacobian
   blocks leaf by leaf (out.shape + leaf.shape) against jacrev and central differences; the same
   under jit;
4. grad of a function that builds and calls a pmap inside it (with and without a psum in the
   shard) against finite differences and against grad of the same maths without pmap.
"""

import numpy as np
import pytest


import s2s  # noqa: E402
from s2s import pytree  # noqa: E402
from cases.fd import assert_close, numeric_grad


# ----- 1. empty batches --------------------------------------------------------------------------
def branch_sort(x):
    if x[0] > 0:
        y = np.sort(x) * 2.0
    else:
        y = x * 3.0
    return np.sum(y * x)


def while_doubling(x):
    s = x[0] * x[0] + 1.0
    while s < 10.0:
        s = s * 2.0 + 1.0
    return s * np.sum(x * x)


def fancy_index(x):
    y = np.reshape(x, (3, 1)) * x
    return np.sum(y[[0, 2], [1, 2]] ** 2)


def sort_pick(x):
    return np.sort(x)[[0, 2]]


EMPTY_TRANSFORMS = {
    "vmap": (lambda f: s2s.vmap(f), lambda f: f),
    "vmap(grad)": (lambda f: s2s.vmap(s2s.grad(f)), s2s.grad),
    "jit(vmap)": (lambda f: s2s.jit(s2s.vmap(f)), lambda f: f),
    "jit(vmap(grad))": (lambda f: s2s.jit(s2s.vmap(s2s.grad(f))), s2s.grad),
}


def _empty_stack_like(one):
    """What a loop over no examples stacks: zero rows of the one-example result's shape and dtype."""
    one = np.asarray(one)
    return np.empty((0,) + one.shape, one.dtype)


def _check_empty_batch(how, fn):
    batched, single = EMPTY_TRANSFORMS[how]
    X = np.array([[0.5, -1.0, 2.0], [-0.3, 0.7, 1.1]])
    vf = batched(fn)
    got, want = np.asarray(vf(np.zeros((0, 3)))), _empty_stack_like(single(fn)(X[0]))
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    assert_close(vf(X), np.stack([single(fn)(x) for x in X]))


@pytest.mark.parametrize("fn", [branch_sort, while_doubling, fancy_index], ids=lambda f: f.__name__)
@pytest.mark.parametrize("how", ["vmap", "vmap(grad)"])
def test_empty_batch_has_the_loops_shape(how, fn):
    """A batch of no examples gives np.stack of zero rows of what one example gives (a branch with
    an op run per example, a while loop, advanced indexing); two examples still give the loop's values."""
    _check_empty_batch(how, fn)


@pytest.mark.parametrize("how, fn", [("jit(vmap)", sort_pick), ("jit(vmap(grad))", while_doubling)],
                         ids=["jit(vmap)-sort_pick", "jit(vmap(grad))-while_doubling"])
def test_empty_batch_under_jit(how, fn):
    """The compiled per-example loops (an op with no array form, advanced indexing, a whole-function
    loop) give the same empty result for a batch of no examples."""
    _check_empty_batch(how, fn)


def test_empty_batch_tuple_output_and_out_axes():
    """vmap(value_and_grad) of a while loop (a per-example loop) with out_axes=(0, 1): each output is
    the loop's empty stack with its batch axis moved."""
    x = np.array([0.5, -1.0, 2.0])
    value, grad = s2s.vmap(s2s.value_and_grad(while_doubling), out_axes=(0, 1))(np.zeros((0, 3)))
    one_value, one_grad = s2s.value_and_grad(while_doubling)(x)
    assert value.shape == (0,) and value.dtype == np.asarray(one_value).dtype
    assert grad.shape == (3, 0) and grad.dtype == one_grad.dtype


def test_empty_batch_of_an_unmapped_argument():
    """An argument with in_axes None is passed as given to the example of zeros."""
    W = np.array([[1.0, 2.0, 0.5], [0.0, 1.0, -1.0]])

    def run(w, x):
        return while_doubling(x) * np.sum(w)
    out = s2s.vmap(s2s.grad(run), in_axes=(None, 0))(W, np.zeros((0, 3)))
    assert out.shape == (0,) + W.shape


# ----- 2. vmap(grad) refuses what grad refuses --------------------------------------------------
def sum_sq(x):
    return np.sum(x * x)


@pytest.mark.parametrize("dtype", [np.int64, np.bool_, np.complex128], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("how", ["vmap(grad)", "jit(vmap(grad))", "vmap(value_and_grad)", "vmap(vmap(grad))"])
def test_vmap_grad_refuses_as_grad(how, dtype):
    """vmap(grad(f)) of int/bool/complex examples raises grad's error: same class, same message."""
    X = np.ones((2, 3), dtype=dtype)
    one = X[0]
    if how == "vmap(vmap(grad))":
        X = np.ones((2, 2, 3), dtype=dtype)
    with pytest.raises(Exception) as expected:
        (s2s.value_and_grad if "value" in how else s2s.grad)(sum_sq)(one)
    transform = {"vmap(grad)": lambda: s2s.vmap(s2s.grad(sum_sq)),
                 "jit(vmap(grad))": lambda: s2s.jit(s2s.vmap(s2s.grad(sum_sq))),
                 "vmap(value_and_grad)": lambda: s2s.vmap(s2s.value_and_grad(sum_sq)),
                 "vmap(vmap(grad))": lambda: s2s.vmap(s2s.vmap(s2s.grad(sum_sq)))}[how]()
    with pytest.raises(type(expected.value)) as got:
        transform(X)
    assert str(got.value) == str(expected.value)


def test_vmap_grad_refuses_a_scalar_example_as_grad_does():
    """Integer examples that are numbers (a batch of rank 1): grad's message for such a number."""
    def square(x):
        return x * x
    with pytest.raises(s2s.errors.NonDifferentiableError) as expected:
        s2s.grad(square)(np.arange(3)[0])
    with pytest.raises(s2s.errors.NonDifferentiableError) as got:
        s2s.vmap(s2s.grad(square))(np.arange(3))
    assert str(got.value) == str(expected.value)


def test_vmap_grad_of_floats_and_unmapped_ints():
    """Float examples give the loop of grads; an int argument not in argnums is not refused."""
    def scaled(x, k):
        return np.sum(x * x) * k
    X = np.array([[0.5, -1.0, 2.0], [-0.3, 0.7, 1.1]])
    got = s2s.vmap(s2s.grad(scaled), in_axes=(0, None))(X, 3)
    assert_close(got, np.stack([s2s.grad(scaled)(x, 3) for x in X]))


# ----- 3. pytree primals in forward mode ---------------------------------------------------------
def dict_scalar(p):
    return np.sum(np.tanh(p["w"] * p["b"][0])) + p["b"][1] ** 2


def dict_scalar_leaves(b, w):
    return np.sum(np.tanh(w * b[0])) + b[1] ** 2


def dict_vector(p):
    return np.tanh(p["w"] * p["b"][0]) + np.sin(p["b"][1]) * p["w"] ** 2


def dict_linear(p):
    return p["w"] * p["b"][0]


def seq_vector(p):
    return np.sin(p[0]) * p[1] + p[2] * np.sum(p[0])


def seq_vector_leaves(a, b, c):
    return np.sin(a) * b + c * np.sum(a)


def _fd_direction(f, p, t, h=1e-6):
    """Central difference of f at pytree p along pytree t."""
    plus, minus = pytree.tree_map(lambda a, b: a + h * b, p, t), pytree.tree_map(lambda a, b: a - h * b, p, t)
    return (np.asarray(f(plus)) - np.asarray(f(minus))) / (2 * h)


def _fd_jacobian_block(f, p, key):
    """d f(p) / d p[key], shape out.shape + leaf.shape, by central differences along each entry."""
    leaf = p[key]
    cols = []
    for k in range(leaf.size):
        unit = np.zeros(leaf.size)
        unit[k] = 1.0
        if isinstance(p, dict):
            t = {name: unit.reshape(leaf.shape) if name == key else np.zeros_like(v) for name, v in p.items()}
        else:
            t = type(p)(unit.reshape(leaf.shape) if i == key else np.zeros_like(v) for i, v in enumerate(p))
        cols.append(_fd_direction(f, p, t))
    out = np.stack(cols, axis=-1)
    return out.reshape(out.shape[:-1] + leaf.shape)


P = {"w": np.array([0.1, 0.2, 0.3]), "b": np.array([0.5, 1.5])}
T = {"w": np.array([1.0, 0.0, 2.0]), "b": np.array([0.3, -1.0])}
SEQ = (np.array([0.3, -0.4]), np.array([1.0, 2.0]), np.array([0.5, 0.25]))
SEQ_T = (np.array([1.0, 0.5]), np.array([-1.0, 0.0]), np.array([0.2, 2.0]))


def test_jvp_dict_primal():
    """jvp with a dict primal equals the jvp of the function of its leaves, and central differences."""
    out, tan = s2s.jvp(dict_scalar, (P,), (T,))
    ref_out, ref_tan = s2s.jvp(dict_scalar_leaves, (P["b"], P["w"]), (T["b"], T["w"]))
    assert_close(out, dict_scalar(P))
    assert_close(out, ref_out)
    assert_close(tan, ref_tan)
    assert_close(tan, _fd_direction(dict_scalar, P, T), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("container", [tuple, list])
def test_jvp_tuple_and_list_primals(container):
    """Tuple and list primals are pytrees: the jvp of the function of their leaves, and differences."""
    p, t = container(SEQ), container(SEQ_T)
    out, tan = s2s.jvp(seq_vector, (p,), (t,))
    ref_out, ref_tan = s2s.jvp(seq_vector_leaves, SEQ, SEQ_T)
    assert_close(out, ref_out)
    assert_close(tan, ref_tan)
    assert_close(tan, _fd_direction(seq_vector, p, t), rtol=1e-6, atol=1e-8)


def test_jvp_tangent_structure_must_match():
    with pytest.raises(s2s.errors.ArgumentError, match="structure of its primal"):
        s2s.jvp(dict_scalar, (P,), ({"w": T["w"]},))


def test_jvp_tangent_function_with_a_dict_primal_and_under_jit():
    """jvp(f)(p, t) and jit(jvp(f))(p, t) with dict p and t equal jvp(f, (p,), (t,))."""
    ref = s2s.jvp(dict_scalar, (P,), (T,))
    assert_close(s2s.jvp(dict_scalar)(P, T), ref)
    assert_close(s2s.jit(s2s.jvp(dict_scalar))(P, T), ref)


@pytest.mark.parametrize("mode", ["jacfwd", "jacrev"])
def test_jacobian_of_a_dict_is_a_dict_of_blocks(mode):
    """jacfwd/jacrev(f)(dict): a dict like the argument, each leaf's block out.shape + leaf.shape,
    against central differences; jacfwd equals jacrev."""
    jac = getattr(s2s, mode)(dict_vector)(P)
    assert isinstance(jac, dict) and sorted(jac) == sorted(P)
    for key in P:
        assert jac[key].shape == np.shape(dict_vector(P)) + P[key].shape
        assert_close(jac[key], _fd_jacobian_block(dict_vector, P, key), rtol=1e-6, atol=1e-8)
    if mode == "jacfwd":
        other = s2s.jacrev(dict_vector)(P)
        for key in P:
            assert_close(jac[key], other[key])


def test_jacfwd_of_a_tuple():
    """jacfwd(f)(tuple) is a tuple of blocks, against differences and jacrev."""
    jac = s2s.jacfwd(seq_vector)(SEQ)
    assert isinstance(jac, tuple) and len(jac) == 3
    rev = s2s.jacrev(seq_vector)(SEQ)
    for k in range(3):
        assert_close(jac[k], _fd_jacobian_block(seq_vector, SEQ, k), rtol=1e-6, atol=1e-8)
        assert_close(jac[k], rev[k])


@pytest.mark.slow      # (~20 s of Numba compiling; the jitted pytree dispatch is covered by jit(jvp(f)) above)
def test_jacfwd_of_a_dict_under_jit():
    """jit(jacfwd(f)) of a dict equals jacfwd(f) (a dict of blocks)."""
    jitted = s2s.jit(s2s.jacfwd(dict_linear))(P)
    plain = s2s.jacfwd(dict_linear)(P)
    assert sorted(jitted) == sorted(plain)
    for key in plain:
        assert_close(jitted[key], plain[key])


def test_jacfwd_of_a_dict_with_an_array_argument_beside_it():
    """argnums=(0, 1) with a dict first and an array second: a tuple (dict of blocks, block)."""
    def two(p, x):
        return p["w"] * x + p["b"][0]
    x = np.array([1.0, -2.0, 0.5])
    jp, jx = s2s.jacfwd(two, argnums=(0, 1))(P, x)
    assert_close(jx, np.diag(P["w"]))
    assert_close(jp["w"], np.diag(x))
    assert_close(jp["b"], np.stack([np.ones(3), np.zeros(3)], axis=-1))


# ----- 4. pmap built inside a differentiated function --------------------------------------------
N_DEV = 4


@pytest.fixture
def four_cpu_devices(monkeypatch):
    monkeypatch.setenv("S2S_CPU_DEVICES", str(N_DEV))
    monkeypatch.delenv("S2S_PMAP_BACKEND", raising=False)


def shard_loss(w, X, y):
    r = X @ w - y
    return np.sum(r * r)


def shard_loss_psum(w, X, y):
    r = X @ w - y
    return s2s.psum(np.sum(r * r), "i")


def loss_with_pmap(w, Xs, ys):
    per_device = s2s.pmap(shard_loss, in_axes=(None, 0, 0))(w, Xs, ys)
    return np.sum(per_device) / N_DEV


def loss_with_pmap_psum(w, Xs, ys):
    per_device = s2s.pmap(shard_loss_psum, axis_name="i", in_axes=(None, 0, 0))(w, Xs, ys)
    return per_device[0] / N_DEV


def loss_without_pmap(w, Xs, ys):
    r = Xs @ w - ys
    return np.sum(r * r) / N_DEV


@pytest.mark.parametrize("loss", [
    loss_with_pmap_psum,
    # (the same construction without a collective: ~15 s of compiling the per-device code again)
    pytest.param(loss_with_pmap, marks=pytest.mark.slow)], ids=lambda f: f.__name__)
def test_grad_of_a_function_that_builds_a_pmap(four_cpu_devices, loss):
    """grad through `s2s.pmap(shard, in_axes=(None, 0, 0))(w, Xs, ys)` built in the function: equal to
    finite differences and to grad of the same maths without pmap, for w and for the mapped data."""
    rng = np.random.default_rng(0)
    w, Xs, ys = rng.normal(size=3), rng.normal(size=(N_DEV, 5, 3)), rng.normal(size=(N_DEV, 5))
    assert_close(loss(w, Xs, ys), loss_without_pmap(w, Xs, ys))
    g = s2s.grad(loss)(w, Xs, ys)
    assert_close(g, numeric_grad(loss_without_pmap, (w, Xs, ys), 0), rtol=1e-6, atol=1e-8)
    assert_close(g, s2s.grad(loss_without_pmap)(w, Xs, ys))
    gX = s2s.grad(loss, argnums=1)(w, Xs, ys)
    assert_close(gX, s2s.grad(loss_without_pmap, argnums=1)(w, Xs, ys))
