"""User-defined derivative rules: custom_vjp, custom_jvp, adjoint/tangent templates, stop_gradient.

Every rule here deliberately differs from the true derivative (a clipped, scaled
or otherwise "wrong" rule), so a passing value proves s2s used the rule and did
not differentiate the function's own source.  The rules live in fixtures_extra.
"""
import re

import numpy as np
import pytest


from cases import fixtures_extra as F
import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad

X = np.array([0.3, -0.7, 1.2])
Y = np.array([1.1, 0.4, -0.9])


# ---------------------------------------------------------------------------
# custom_vjp
# ---------------------------------------------------------------------------

def test_custom_vjp_clipped_gradient_is_used():
    # true gradient of sum(clip(3 x)) is 3 everywhere; the cotangent reaching the
    # rule is 1 (from the sum), clipped to 0.5, then scaled by 3: 1.5
    g = s2s.grad(F.uses_clip)(X)
    assert_close(g, np.full(3, 1.5), what="clipped gradient")
    true = numeric_grad(F.uses_clip, (X,), 0)
    assert not np.allclose(g, true), "the custom rule must change the gradient"


def test_custom_vjp_clip_with_other_paths():
    # y = clip(sin x): cotangent 2 is clipped to 0.5; the x*x term is untouched
    g = s2s.grad(F.uses_clip_twice)(X)
    assert_close(g, 0.5 * np.cos(X) + 2.0 * X, what="clipped + plain gradient")


def test_custom_vjp_show_contains_rule_call():
    text = s2s.show(F.uses_clip)
    assert "custom_vjp_cotangent" in text
    assert re.search(r"custom_vjp_cotangent\(\s*fx_clip_gradient\b", text), text
    # the function's own body (x itself) must not be differentiated instead
    assert "fx_clip_gradient(" in text


def test_custom_vjp_scaled_rule_with_residuals():
    # bwd returns 10 g cos(x) (true: g cos(x)) using the residual saved by fwd
    g = s2s.grad(F.uses_scaled_sin)(X)
    assert_close(g, 10.0 * 2.0 * np.sin(X) * np.cos(X), what="scaled sin gradient")


def test_custom_vjp_in_value_and_grad():
    v, g = s2s.value_and_grad(F.uses_scaled_sin)(X)
    assert_close(v, np.sum(np.sin(X) ** 2), what="value")
    assert_close(g, 20.0 * np.sin(X) * np.cos(X), what="gradient")


def test_custom_vjp_in_vjp_and_jacrev():
    out, vjp_fn = s2s.vjp(F.uses_scaled_sin_vec, X)
    assert_close(out, 2.0 * np.sin(X), what="vjp primal")
    u = np.array([1.0, -2.0, 0.5])
    (ct,) = vjp_fn(u)
    assert_close(ct, 10.0 * 2.0 * u * np.cos(X), what="vjp cotangent")
    J = s2s.jacrev(F.uses_scaled_sin_vec)(X)
    assert_close(J, np.diag(20.0 * np.cos(X)), what="jacrev through custom_vjp")


def test_custom_vjp_two_arguments_argnums_tuple():
    gx, gy = s2s.grad(F.uses_mul2, argnums=(0, 1))(X, Y)
    assert_close(gx, 2.0 * Y, what="d/dx (rule: 2 g y)")
    assert_close(gy, 3.0 * X, what="d/dy (rule: 3 g x)")
    # single argnums picks the matching cotangent
    assert_close(s2s.grad(F.uses_mul2, argnums=1)(X, Y), 3.0 * X, what="argnums=1")
    text = s2s.show(F.uses_mul2, argnums=(0, 1))
    assert re.search(r"custom_vjp_cotangent\(\s*fx_mul2,\s*0\b", text), text
    assert re.search(r"custom_vjp_cotangent\(\s*fx_mul2,\s*1\b", text), text


def test_custom_vjp_function_transformed_directly():
    # grad(f) of the custom function itself (no wrapper) uses the rule too
    assert_close(s2s.grad(F.fx_clip_gradient)(2.0), 0.5, what="grad of the custom_vjp itself")


def test_custom_vjp_still_callable_as_plain_function():
    assert_close(F.fx_scaled_sin(X), np.sin(X), what="primal")
    assert_close(F.fx_mul2(X, Y), X * Y, what="primal")


def test_custom_vjp_bwd_wrong_number_of_cotangents_raises():
    with pytest.raises((TypeError, s2s.S2SError)) as info:
        s2s.grad(F.uses_bad_arity, argnums=(0, 1))(X, Y)
    msg = str(info.value)
    assert "fx_bad_arity" in msg, msg
    assert "2" in msg and "cotangent" in msg, msg


def test_custom_vjp_bwd_wrong_count_message_says_what_it_got():
    # A clear message says how many cotangents bwd returned (1), not just "tuple".
    with pytest.raises((TypeError, s2s.S2SError)) as info:
        s2s.grad(F.uses_bad_arity, argnums=(0, 1))(X, Y)
    msg = str(info.value)
    assert re.search(r"got\b[^\n]*\b1\b", msg), \
        f"message does not say bwd returned 1 cotangent: {msg!r}"


def test_custom_vjp_bwd_not_a_tuple_raises():
    with pytest.raises((TypeError, s2s.S2SError)) as info:
        s2s.grad(F.uses_bad_not_tuple)(X)
    msg = str(info.value)
    assert "fx_bad_not_tuple" in msg and "tuple" in msg, msg


# ---------------------------------------------------------------------------
# custom_jvp
# ---------------------------------------------------------------------------

def test_custom_jvp_in_jvp():
    t = np.array([1.0, 0.5, -2.0])
    out, tout = s2s.jvp(F.uses_cube, (X,), (t,))
    assert_close(out, X ** 3, what="primal")
    assert_close(tout, 2.0 * X * t, what="tangent from the rule (2 x t, not 3 x^2 t)")


def test_custom_jvp_directly():
    out, tout = s2s.jvp(F.fx_cube, (X,), (np.ones(3),))
    assert_close(out, X ** 3, what="primal")
    assert_close(tout, 2.0 * X, what="tangent")


def test_custom_jvp_in_grad_uses_the_jvp_rule():
    g = s2s.grad(F.uses_cube_sum)(X)
    assert_close(g, 2.0 * X, what="reverse mode from the jvp rule")
    assert "custom_jvp_cotangent" in s2s.show(F.uses_cube_sum)
    assert_close(s2s.grad(F.fx_cube)(2.0), 4.0, what="scalar grad of custom_jvp")


def test_custom_jvp_two_arguments():
    tx = np.array([1.0, 0.0, 2.0])
    tw = np.array([0.5, 1.0, -1.0])
    out, tout = s2s.jvp(F.uses_wsum, (X, Y), (tx, tw))
    assert_close(out, X * Y, what="primal")
    assert_close(tout, 5.0 * Y * tx + 7.0 * X * tw, what="tangent (5 w tx + 7 x tw)")
    gx, gw = s2s.grad(F.uses_wsum_sum, argnums=(0, 1))(X, Y)
    assert_close(gx, 5.0 * Y, what="d/dx from rule")
    assert_close(gw, 7.0 * X, what="d/dw from rule")


def test_custom_jvp_show_jvp_contains_rule_call():
    text = s2s.show(F.uses_cube, "jvp")
    assert re.search(r"custom_jvp_tangent\(\s*fx_cube\b", text), text


# ---------------------------------------------------------------------------
# adjoint / tangent templates
# ---------------------------------------------------------------------------

def test_adjoint_template_value_used():
    # the template says d[x] = d[y] * 4 x  (true derivative of x*x: 2 x)
    assert_close(s2s.grad(F.uses_fx_square)(X), 4.0 * X, what="adjoint template value")


def test_adjoint_template_visible_in_show():
    text = s2s.show(F.uses_fx_square)
    assert "fx_marker_scale(" in text, text
    # pasted with the call's argument substituted for the template parameter
    assert re.search(r"\*\s*fx_marker_scale\(\s*x\s*\)", text), text
    # the user function's own body (x * x) is not differentiated
    assert "d[" not in text


def test_tangent_template_in_jvp():
    t = np.array([1.0, 2.0, -1.0])
    out, tout = s2s.jvp(F.uses_fx_square_vec, (X,), (t,))
    assert_close(out, X * X, what="primal")
    assert_close(tout, 6.0 * X * t, what="tangent template value (6 x t)")
    text = s2s.show(F.uses_fx_square_vec, "jvp")
    assert "6.0" in text, text


def test_tangent_template_in_jacfwd():
    J = s2s.jacfwd(F.uses_fx_square_vec)(X)
    assert_close(J, np.diag(6.0 * X), what="jacfwd through tangent template")


# ---------------------------------------------------------------------------
# stop_gradient
# ---------------------------------------------------------------------------

def test_stop_gradient_product():
    # d/dx sum(x * sg(x)) = x  (not 2 x)
    assert_close(s2s.grad(F.sg_product)(X), X, what="x * stop_gradient(x)")


def test_stop_gradient_alone_is_zero():
    g = s2s.grad(F.sg_only)(X)
    assert_close(g, np.zeros(3), what="gradient through stop_gradient only")


def test_stop_gradient_leaves_other_paths():
    gx, gy = s2s.grad(F.sg_mixed, argnums=(0, 1))(X, Y)
    assert_close(gx, Y, what="d/dx: only the un-stopped x * y term")
    assert_close(gy, np.sin(X) + X, what="d/dy: both terms")


def test_stop_gradient_value_is_identity():
    assert_close(s2s.stop_gradient(X), X, what="value")
    out, _ = s2s.vjp(F.sg_elementwise, X)
    assert_close(out, X * X, what="primal")


def test_stop_gradient_in_vjp():
    _, vjp_fn = s2s.vjp(F.sg_elementwise, X)
    (ct,) = vjp_fn(np.ones(3))
    assert_close(ct, X, what="vjp through stop_gradient")


def test_stop_gradient_in_jvp():
    t = np.array([1.0, -1.0, 2.0])
    out, tout = s2s.jvp(F.sg_elementwise, (X,), (t,))
    assert_close(out, X * X, what="primal")
    assert_close(tout, X * t, what="tangent through stop_gradient")


# ---------------------------------------------------------------------------
# rules under other transforms
# ---------------------------------------------------------------------------

def test_custom_vjp_in_forward_mode_is_a_clear_error():
    # as in JAX, a custom_vjp function has no forward-mode rule
    with pytest.raises(s2s.NoRuleError) as info:
        s2s.jvp(F.uses_scaled_sin_vec, (X,), (np.ones(3),))
    assert "fx_scaled_sin" in str(info.value)


def test_adjoint_template_under_hessian():
    # the template d[x] = d[y] * 4 x is itself differentiated: hessian 4 I
    H = s2s.hessian(F.uses_fx_square)(X)
    assert_close(H, 4.0 * np.eye(3), what="hessian through an adjoint template")


def test_stop_gradient_under_hessian():
    # grad of sum(x * sg(x)) is sg(x): its derivative is zero
    H = s2s.hessian(F.sg_product)(X)
    assert_close(H, np.zeros((3, 3)), what="hessian through stop_gradient")


def test_custom_jvp_under_hessian_is_refused_clearly():
    # Forward over reverse through a custom_jvp rule would need the derivative of the
    # user's jvp rule itself; s2s refuses it (naming the missing rule) instead of guessing.
    with pytest.raises(s2s.NoRuleError, match="custom_jvp_cotangent"):
        s2s.hessian(F.uses_cube_sum)(X)
