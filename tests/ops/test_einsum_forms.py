"""np.einsum in the forms people write: the sublist form, any number of
operands, subscripts in a module constant.  The sublist form's first operand used to bind to
the rule's `subscripts` argument and got a zero gradient; now every form is differentiated
(grad vs finite differences, jvp vs grad, vmap vs a loop, jit(grad) == grad) or refused."""
import numpy as np
import pytest

import s2s
from cases.fd import assert_close, numeric_grad

rng = np.random.default_rng(7)
W = rng.normal(size=(3, 3))
A, B, C, D = (rng.normal(size=s) for s in ((3, 4), (4, 2), (2, 3), (3, 5)))
T = rng.normal(size=(2, 3, 4))
SPEC = "ij,jk->ik"


def transpose_sublist(x):
    return np.sum(np.einsum(x, (0, 1), (1, 0)) * W)


def matmul_sublist(x, y):
    return np.sum(np.einsum(x, (0, 1), y, (1, 2), (0, 2)) ** 2)


def matmul_sublist_implicit_output(x, y):
    return np.sum(np.einsum(x, [0, 1], y, [1, 2]) ** 2)


def batched_sublist_with_ellipsis(x, y):
    return np.sum(np.sin(np.einsum(x, [Ellipsis, 0], y, [0, 1], [Ellipsis, 1])))


def chain_of_four(a, b, c, d):
    return np.sum(np.einsum("ij,jk,kl,lm->im", a, b, c, d) ** 2)


def chain_of_four_implicit_output(a, b, c, d):
    return np.sum(np.tanh(np.einsum("ij,jk,kl,lm", a, b, c, d)))


def five_vectors_dotted(a, b, c, d, e):
    return np.einsum("i,i,i,i,i->", a, b, c, d, e)


def subscripts_in_a_module_constant(x, y):
    return np.sum(np.einsum(SPEC, x, y) ** 2)


v = [rng.normal(size=4) for _ in range(5)]
CASES = [
    (transpose_sublist, (A[:, :3].copy(),)),
    (matmul_sublist, (A, B)),
    (matmul_sublist_implicit_output, (A, B)),
    (batched_sublist_with_ellipsis, (T, B)),
    (chain_of_four, (A, B, C, D)),
    (chain_of_four_implicit_output, (A, B, C, D)),
    (five_vectors_dotted, tuple(v)),
    (subscripts_in_a_module_constant, (A, B)),
]
IDS = [fn.__name__ for fn, _ in CASES]


@pytest.mark.parametrize("fn, args", CASES, ids=IDS)
def test_the_function_is_plain_numpy(fn, args):
    assert np.ndim(fn(*args)) == 0


@pytest.mark.parametrize("fn, args", CASES, ids=IDS)
def test_grad_of_every_operand_matches_finite_differences(fn, args):
    nums = tuple(range(len(args)))
    g = s2s.grad(fn, argnums=nums)(*args)
    for k in nums:
        assert_close(g[k], numeric_grad(fn, args, k), rtol=1e-6, atol=1e-8, what=f"{fn.__name__} d/d arg {k}")
        assert np.any(g[k] != 0), "a zero gradient: an operand was read as a constant"


@pytest.mark.parametrize("fn, args", CASES, ids=IDS)
def test_jvp_agrees_with_grad(fn, args):
    nums = tuple(range(len(args)))
    g = s2s.grad(fn, argnums=nums)(*args)
    tangents = tuple(rng.normal(size=np.shape(a)) for a in args)
    value, tangent = s2s.jvp(fn, args, tangents)
    assert_close(value, fn(*args), rtol=1e-12, atol=1e-12)
    assert_close(tangent, sum(np.sum(gk * t) for gk, t in zip(g, tangents)), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("fn, args", CASES[:5], ids=IDS[:5])
def test_vmap_of_grad_matches_a_loop(fn, args):
    batch = np.stack([args[0] + 0.1 * k for k in range(3)])
    in_axes = (0,) + (None,) * (len(args) - 1)
    got = s2s.vmap(s2s.grad(fn), in_axes=in_axes)(batch, *args[1:])
    want = np.stack([s2s.grad(fn)(b, *args[1:]) for b in batch])
    assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn, args", [CASES[1], CASES[4]], ids=[IDS[1], IDS[4]])
def test_jit_grad_equals_grad(fn, args):
    nums = tuple(range(len(args)))
    got = s2s.jit(s2s.grad(fn, argnums=nums))(*args)
    want = s2s.grad(fn, argnums=nums)(*args)
    for g, w in zip(got, want):
        assert_close(g, w, rtol=1e-12, atol=1e-12)


def subscripts_in_a_local_variable(x):
    spec = "ij->ji"
    return np.sum(np.einsum(spec, x) * W)


def sublist_built_at_run_time(x):
    axes = [0, 1]
    return np.sum(np.einsum(x, axes) * W)


def test_subscripts_in_a_local_variable():
    assert_close(s2s.grad(subscripts_in_a_local_variable)(W), W.T, rtol=1e-12, atol=0)


def test_a_sublist_built_in_the_function_is_refused_at_the_users_line():
    with pytest.raises(s2s.S2SError) as info:
        s2s.grad(sublist_built_at_run_time)(W)
    text = str(info.value)
    assert "test_einsum_forms.py" in text and "np.einsum(x, axes)" in text
    assert "sublist built in the function" in text


def weights_in_a_local_list(x):
    w = [1.0, 2.0, 3.0]
    return np.einsum("i,i->", w, x)


def test_a_list_operand_of_the_string_form_is_an_operand_not_a_sublist():
    # (the sublist check refused it while reading every odd argument as a sublist)
    assert_close(s2s.grad(weights_in_a_local_list)(np.ones(3)), np.array([1.0, 2.0, 3.0]), rtol=0, atol=0)
