"""Pytrees: flatten/unflatten/map, and grad/value_and_grad over nested containers.

Gradients are compared leaf by leaf against central finite differences of the
loss as a function of that one leaf, and checked for structure (same container
types, same keys/fields, same leaf shapes).
"""
import collections
import dataclasses

import numpy as np
import pytest


from cases import fixtures_extra as F
import s2s  # noqa: E402
from cases.fd import assert_close, numeric_grad

Point = collections.namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Box:
    lo: object
    hi: object


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def assert_same_structure(a, b, path="tree"):
    """Same container types, same keys/fields/lengths, same leaf shapes."""
    is_container = isinstance(b, (dict, tuple, list)) or b is None or dataclasses.is_dataclass(b)
    if is_container:
        assert type(a) is type(b), f"{path}: type {type(a).__name__} != {type(b).__name__}"
    if isinstance(b, dict):
        assert set(a) == set(b), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in b:
            assert_same_structure(a[k], b[k], f"{path}[{k!r}]")
    elif dataclasses.is_dataclass(b):
        for fld in dataclasses.fields(b):
            assert_same_structure(getattr(a, fld.name), getattr(b, fld.name), f"{path}.{fld.name}")
    elif isinstance(b, (tuple, list)):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_structure(x, y, f"{path}[{i}]")
    elif b is None:
        assert a is None, f"{path}: expected None"
    else:
        assert np.shape(a) == np.shape(b), f"{path}: shape {np.shape(a)} != {np.shape(b)}"


def fd_tree_grad(f, args, argnum, eps=1e-6):
    """Finite-difference gradient of f w.r.t. every leaf of args[argnum], as a tree."""
    leaves, td = s2s.tree_flatten(args[argnum])
    grads = []
    for i in range(len(leaves)):
        def of_leaf(leaf, i=i):
            new = list(leaves)
            new[i] = leaf
            a = list(args)
            a[argnum] = s2s.tree_unflatten(td, new)
            return f(*a)
        grads.append(numeric_grad(of_leaf, (leaves[i],), 0, eps=eps))
    return s2s.tree_unflatten(td, grads)


def assert_tree_close(got, expected, what="gradient", rtol=1e-5, atol=1e-6):
    assert_same_structure(got, expected, what)
    gl, _ = s2s.tree_flatten(got)
    el, _ = s2s.tree_flatten(expected)
    assert len(gl) == len(el)
    for i, (g, e) in enumerate(zip(gl, el)):
        assert_close(g, e, rtol=rtol, atol=atol, what=f"{what} leaf {i}")


def rng():
    return np.random.default_rng(1234)


def dense(r, n_in, n_out):
    return r.standard_normal((n_in, n_out)) * 0.5, r.standard_normal(n_out) * 0.1


# ---------------------------------------------------------------------------
# flatten / unflatten / map
# ---------------------------------------------------------------------------

ROUND_TRIP = [
    pytest.param(np.arange(3.0), id="leaf"),
    pytest.param(2.5, id="scalar-leaf"),
    pytest.param((1.0, np.ones(2)), id="tuple"),
    pytest.param([np.zeros(2), [3.0, (4.0,)]], id="nested-list"),
    pytest.param({"b": 1.0, "a": np.ones(3), "c": {"z": 2.0, "y": [5.0]}}, id="nested-dict"),
    pytest.param(Point(np.ones(2), 3.0), id="namedtuple"),
    pytest.param(Box(lo=np.zeros(2), hi=(1.0, 2.0)), id="dataclass"),
    pytest.param({"p": None, "q": [None, 1.0], "r": (None,)}, id="none"),
    pytest.param([Point(1.0, Box(2.0, {"k": [3.0, None]})), {"m": Point(4.0, 5.0)}], id="mixed"),
    pytest.param((), id="empty-tuple"),
    pytest.param({}, id="empty-dict"),
]


def _leaves_equal(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("tree", ROUND_TRIP)
def test_flatten_unflatten_round_trip(tree):
    leaves, td = s2s.tree_flatten(tree)
    back = s2s.tree_unflatten(td, leaves)
    assert_same_structure(back, tree)
    _leaves_equal(s2s.tree_leaves(back), leaves)
    # the treedef is hashable and stable
    assert hash(td) == hash(s2s.tree_flatten(back)[1])
    assert s2s.tree_flatten(back)[1] == td


def test_flatten_order_and_none():
    tree = {"b": 2.0, "a": [1.0, None, (3.0,)], "c": None}
    leaves, td = s2s.tree_flatten(tree)
    assert leaves == [1.0, 3.0, 2.0]   # dicts by sorted key, None is not a leaf
    assert s2s.tree_leaves(tree) == leaves
    back = s2s.tree_unflatten(td, [10.0, 30.0, 20.0])
    assert back == {"a": [10.0, None, (30.0,)], "b": 20.0, "c": None}


def test_unflatten_builds_namedtuple_and_dataclass():
    _, td = s2s.tree_flatten([Point(1.0, 2.0), Box(3.0, 4.0)])
    back = s2s.tree_unflatten(td, [5.0, 6.0, 7.0, 8.0])
    assert back == [Point(5.0, 6.0), Box(7.0, 8.0)]
    assert type(back[0]) is Point and type(back[1]) is Box


def test_tree_map_two_trees():
    a = {"w": np.ones(2), "s": [1.0, Point(2.0, 3.0)]}
    b = {"w": np.arange(2.0), "s": [10.0, Point(20.0, 30.0)]}
    out = s2s.tree_map(lambda x, y: x * 2 + y, a, b)
    assert_same_structure(out, a)
    np.testing.assert_array_equal(out["w"], np.array([2.0, 3.0]))
    assert out["s"][0] == 12.0
    assert out["s"][1] == Point(24.0, 36.0)


def test_tree_map_one_tree_and_mismatch():
    out = s2s.tree_map(lambda x: -x, (1.0, [2.0]))
    assert out == (-1.0, [-2.0])
    with pytest.raises(ValueError):
        s2s.tree_map(lambda x, y: x + y, (1.0, 2.0), (1.0, [2.0]))
    with pytest.raises(ValueError):
        s2s.tree_map(lambda x, y: x + y, {"a": 1.0}, {"b": 1.0})


# ---------------------------------------------------------------------------
# grad with pytree arguments
# ---------------------------------------------------------------------------

def test_grad_dict_params():
    r = rng()
    W, b = dense(r, 3, 2)
    params = {"W": W, "b": b}
    x = r.standard_normal((4, 3))
    g = s2s.grad(F.loss_dict)(params, x)
    assert type(g) is dict and set(g) == {"W", "b"}
    assert_tree_close(g, fd_tree_grad(F.loss_dict, (params, x), 0))
    # arguments untouched
    np.testing.assert_array_equal(params["W"], W)


def test_grad_mlp_list_of_tuples():
    r = rng()
    params = [dense(r, 3, 4), dense(r, 4, 4), dense(r, 4, 2)]
    x = r.standard_normal((5, 3))
    g = s2s.grad(F.loss_mlp)(params, x)
    assert isinstance(g, list) and len(g) == 3
    assert all(type(layer) is tuple and len(layer) == 2 for layer in g)
    assert_tree_close(g, fd_tree_grad(F.loss_mlp, (params, x), 0))


def test_grad_namedtuple():
    r = rng()
    p = F.Params(*dense(r, 3, 2))
    x = r.standard_normal((4, 3))
    g = s2s.grad(F.loss_namedtuple)(p, x)
    assert type(g) is F.Params and g._fields == ("W", "b")
    assert_tree_close(g, fd_tree_grad(F.loss_namedtuple, (p, x), 0))


def test_grad_dataclass():
    r = rng()
    p = F.DenseParams(*dense(r, 3, 2))
    x = r.standard_normal((4, 3))
    g = s2s.grad(F.loss_dataclass)(p, x)
    assert type(g) is F.DenseParams
    assert_tree_close(g, fd_tree_grad(F.loss_dataclass, (p, x), 0))


def test_grad_dict_items_loop():
    r = rng()
    params = {"W": r.standard_normal((3, 2)), "b": r.standard_normal(2), "a": r.standard_normal(())}
    g = s2s.grad(F.loss_items)(params, 1.5)
    assert set(g) == {"W", "b", "a"}
    assert_tree_close(g, fd_tree_grad(F.loss_items, (params, 1.5), 0))
    assert_close(g["b"], 3.0 * params["b"], what="closed form 2 * 1.5 * b")


def test_grad_nested_dict_list_tuple():
    r = rng()
    W, b = dense(r, 3, 2)
    tree = {"enc": (W, b), "dec": {"scale": r.standard_normal(2), "bias": r.standard_normal(2)}}
    x = r.standard_normal((4, 3))
    g = s2s.grad(F.loss_nested)(tree, x)
    assert_tree_close(g, fd_tree_grad(F.loss_nested, (tree, x), 0))


def test_grad_nested_with_none_leaf():
    r = rng()
    W, b = dense(r, 3, 2)
    tree = {"enc": [W, b], "dec": {"scale": r.standard_normal(2), "bias": r.standard_normal(2)},
            "unused": None}
    x = r.standard_normal((4, 3))
    g = s2s.grad(F.loss_nested)(tree, x)
    assert g["unused"] is None
    assert_tree_close(g, fd_tree_grad(F.loss_nested, (tree, x), 0))


def test_argnums_selects_subtree_other_tree_not_differentiated():
    r = rng()
    params = {"W": r.standard_normal((3, 2)), "b": r.standard_normal(2)}
    state = {"mean": r.standard_normal(3), "std": r.uniform(0.5, 1.5, 3)}
    x = r.standard_normal((4, 3))
    g = s2s.grad(F.loss_with_state, argnums=0)(params, state, x)
    assert set(g) == {"W", "b"}
    assert_tree_close(g, fd_tree_grad(F.loss_with_state, (params, state, x), 0))
    gs = s2s.grad(F.loss_with_state, argnums=1)(params, state, x)
    assert set(gs) == {"mean", "std"}
    assert_tree_close(gs, fd_tree_grad(F.loss_with_state, (params, state, x), 1))


def test_argnums_tuple_two_trees():
    r = rng()
    p = {"a": r.standard_normal(2)}
    q = (r.standard_normal(2), r.standard_normal((3, 2)))
    gp, gq = s2s.grad(F.loss_two_trees, argnums=(0, 1))(p, q)
    assert_tree_close(gp, fd_tree_grad(F.loss_two_trees, (p, q), 0), what="grad p")
    assert_tree_close(gq, fd_tree_grad(F.loss_two_trees, (p, q), 1), what="grad q")
    only_q = s2s.grad(F.loss_two_trees, argnums=1)(p, q)
    assert_tree_close(only_q, gq, what="argnums=1 alone")


def test_argnums_tree_and_plain_array():
    r = rng()
    params = {"W": r.standard_normal((3, 2)), "b": r.standard_normal(2)}
    x = r.standard_normal((4, 3))
    gp, gx = s2s.grad(F.loss_dict, argnums=(0, 1))(params, x)
    assert_tree_close(gp, fd_tree_grad(F.loss_dict, (params, x), 0))
    assert_close(gx, numeric_grad(F.loss_dict, (params, x), 1), what="grad x")


def test_value_and_grad_pytree():
    r = rng()
    params = [dense(r, 3, 3), dense(r, 3, 1)]
    x = r.standard_normal((2, 3))
    v, g = s2s.value_and_grad(F.loss_mlp)(params, x)
    assert_close(v, F.loss_mlp(params, x), rtol=1e-12, atol=1e-12, what="value")
    assert_tree_close(g, fd_tree_grad(F.loss_mlp, (params, x), 0))


def test_grad_has_aux_pytree():
    r = rng()
    params = {"W": r.standard_normal((3, 2)), "b": r.standard_normal(2)}
    x = r.standard_normal((4, 3))
    g, aux = s2s.grad(F.loss_aux, has_aux=True)(params, x)
    assert_tree_close(g, fd_tree_grad(lambda p, xx: F.loss_aux(p, xx)[0], (params, x), 0))
    assert set(aux) == {"pred", "n"} and aux["n"] == 3
    np.testing.assert_allclose(aux["pred"], x @ params["W"] + params["b"], rtol=1e-12)


def test_value_and_grad_has_aux_pytree():
    r = rng()
    params = {"W": r.standard_normal((3, 2)), "b": r.standard_normal(2)}
    x = r.standard_normal((4, 3))
    (v, aux), g = s2s.value_and_grad(F.loss_aux, has_aux=True)(params, x)
    assert_close(v, F.loss_aux(params, x)[0], rtol=1e-12, atol=1e-12, what="value")
    np.testing.assert_allclose(aux["pred"], x @ params["W"] + params["b"], rtol=1e-12)
    assert_tree_close(g, fd_tree_grad(lambda p, xx: F.loss_aux(p, xx)[0], (params, x), 0))


def test_pytree_grad_cached_per_structure():
    # same structure twice -> the same answer; a different structure is handled too
    r = rng()
    x = r.standard_normal((2, 3))
    p2 = [dense(r, 3, 2)]
    p3 = [dense(r, 3, 3), dense(r, 3, 2)]
    g2a = s2s.grad(F.loss_mlp)(p2, x)
    g3 = s2s.grad(F.loss_mlp)(p3, x)
    g2b = s2s.grad(F.loss_mlp)(p2, x)
    assert_tree_close(g2a, g2b)
    assert len(g3) == 2
    assert_tree_close(g3, fd_tree_grad(F.loss_mlp, (p3, x), 0))
