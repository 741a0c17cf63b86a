"""Rules for the helpers generated code calls (s2s.runtime), so that the code
a transform emits can itself be transformed (derivatives of any order).

Helpers written in plain NumPy need no rule: s2s reads their source and
differentiates through them like a user's helper (matmul_vjp_a / _b have rules all
the same: their rank branches would not compile).
"""
from ... import runtime as rt
from ...runtime import batching as rtb
from ...runtime import fused as rtf
from ...rules.registry import adjoint, declare, nondiff, refuse, register, tangent

# Tape operations.  Their adjoints use the tape's own adjoint (another stack);
# the reverse pass implements them directly (see transforms/reverse.py).
register(rt.stack, "stack", nondiff=True, fresh=True)
register(rt.push, "push")
register(rt.pop, "pop")
register(rt.restore, "restore")      # typed tapes (compiled backends); not differentiated again
register(rt.copy_value, "copy_value", fresh=True)


@adjoint(rt.copy_value, "copy_value")
def copy_value(y, x):
    d[x] = d[y]


@tangent(rt.copy_value, "copy_value")
def copy_value_t(y, x):
    t[y] = copy_value(t[x])

for _fn in (rt.seed_cotangent, rt.reduced_size, rt.extremum_weights, rt.tie_weight,
            rt.inverse_axes, rt.float_dtype_flag, rt.fft_axes):
    nondiff(_fn, _fn.__name__)
nondiff(rt.zeros_like, "zeros_like", fresh=True)


# matmul's cotangents are linear maps (each the transpose of a product with one operand):
# <matmul_vjp_b(g, a, b), c> = <g, a @ c> and <matmul_vjp_a(g, a, b), c> = <g, c @ b>, for every
# rank and broadcast. As rules (not read as code) a derivative of a derivative through `@` has no
# branch on ranks, which compiled code could not type (MAML under jit).
@adjoint(rt.matmul_vjp_a, "matmul_vjp_a", shape_only=("a",))
def matmul_vjp_a(y, g, a, b):
    d[g] = np.matmul(d[y], b)
    d[b] = matmul_vjp_b(g, d[y], b)


@tangent(rt.matmul_vjp_a, "matmul_vjp_a", shape_only=("a",))
def matmul_vjp_a_t(y, g, a, b):
    t[y] = matmul_vjp_a(t[g], a, b) + matmul_vjp_a(g, a, t[b])


@adjoint(rt.matmul_vjp_b, "matmul_vjp_b", shape_only=("b",))
def matmul_vjp_b(y, g, a, b):
    d[g] = np.matmul(a, d[y])
    d[a] = matmul_vjp_a(g, a, d[y])


@tangent(rt.matmul_vjp_b, "matmul_vjp_b", shape_only=("b",))
def matmul_vjp_b_t(y, g, a, b):
    t[y] = matmul_vjp_b(t[g], a, b) + matmul_vjp_b(g, t[a], b)


declare(rt.matmul_vjp_a, batch="matmul_vjp_a")
declare(rt.matmul_vjp_b, batch="matmul_vjp_b")


@adjoint(rt.unbroadcast, "unbroadcast", shape_only=("x",))
def unbroadcast(y, g, x):
    d[g] = broadcast_like(d[y], g)


@adjoint(rt.broadcast_like, "broadcast_like", shape_only=("x",))
def broadcast_like(y, g, x):
    d[g] = unbroadcast(d[y], g)


@adjoint(rt.expand_reduced, "expand_reduced", shape_only=("x",))
def expand_reduced(y, g, x, axis=None, keepdims=False):
    d[g] = np.sum(d[y], axis=axis, keepdims=keepdims)


@adjoint(rt.to_float, "to_float")
def to_float(y, x):
    d[x] = d[y]


@adjoint(rt.getitem_vjp, "getitem_vjp", shape_only=("x",))
def getitem_vjp(y, g, x, index):
    d[g] = d[y][index]
register(rt.add_at, "add_at")   # in place; the reverse pass handles it like push/pop
register(rt.choose, "choose")   # adjoint in the reverse pass (variadic)


@adjoint(rt.pick_cotangent, "pick_cotangent", shape_only=("like",))
def pick_cotangent(y, g, index, k, like):
    d[g] = pick_cotangent(d[y], index, k, g)


# ----- Tangents of the helpers reverse mode emits (forward-over-reverse) -----
from ...rules.registry import tangent  # noqa: E402


@tangent(rt.unbroadcast, "unbroadcast", shape_only=("x",))
def unbroadcast_t(y, g, x):
    t[y] = unbroadcast(t[g], x)


@tangent(rt.broadcast_like, "broadcast_like", shape_only=("x",))
def broadcast_like_t(y, g, x):
    t[y] = broadcast_like(t[g], x)


@tangent(rt.expand_reduced, "expand_reduced", shape_only=("x",))
def expand_reduced_t(y, g, x, axis=None, keepdims=False):
    t[y] = expand_reduced(t[g], x, axis, keepdims)


@tangent(rt.to_float, "to_float")
def to_float_t(y, x):
    t[y] = t[x]


@tangent(rt.getitem_vjp, "getitem_vjp", shape_only=("x",))
def getitem_vjp_t(y, g, x, index):
    t[y] = getitem_vjp(t[g], x, index)


@tangent(rt.pick_cotangent, "pick_cotangent")
def pick_cotangent_t(y, g, index, k, like):
    t[y] = pick_cotangent(t[g], index, k, like)

nondiff(rt.stop_gradient, "stop_gradient")
# Rules made of user rules: no derivative of their own (a clear error at second order).
register(rt.custom_vjp_cotangent, "custom_vjp_cotangent")
register(rt.custom_jvp_tangent, "custom_jvp_tangent")
register(rt.custom_jvp_cotangent, "custom_jvp_cotangent")
register(rt.build_record, "build_record")   # containers are split apart before differentiation


@adjoint(rt.setitem_cotangent, "setitem_cotangent", shape_only=("like",))
def setitem_cotangent(y, g, index, like):
    d[g] = getitem_vjp(broadcast_like(d[y], setitem_cotangent(g, index, like)), g, index)


@tangent(rt.setitem_cotangent, "setitem_cotangent", shape_only=("like",))
def setitem_cotangent_t(y, g, index, like):
    t[y] = setitem_cotangent(t[g], index, like)


# ----- Batching helpers (vmap) ---------------------------------------------------
for _fn in (rtb.batch_size, rtb.bshape, rtb.bsize, rtb.blen, rtb.bseed, rtb.breduced_size, rtb.baxis, rtb.ex_ndim):
    nondiff(_fn, _fn.__name__)
for _fn in (rtb.bunbroadcast, rtb.badd_at, rtb.bmap, rtb.per_example, rtb.bgetitem,
            rtb.bsetitem, rtb.bflatten, rtb.breshape, rtb.btranspose, rtb.bdot):
    register(_fn, _fn.__name__)     # no derivative rules yet: differentiating them is a clear error


@adjoint(rtb.bmove, "bmove", shape_only=("axis",))
def bmove(y, x, axis):
    d[x] = bout(d[y], axis)


@tangent(rtb.bmove, "bmove", shape_only=("axis",))
def bmove_t(y, x, axis):
    t[y] = bmove(t[x], axis)


@adjoint(rtb.bout, "bout", shape_only=("axis",))
def bout(y, x, axis):
    d[x] = bmove(d[y], axis)


@tangent(rtb.bout, "bout", shape_only=("axis",))
def bout_t(y, x, axis):
    t[y] = bout(t[x], axis)


@adjoint(rtb.bexpand, "bexpand", shape_only=("size",))
def bexpand(y, x, size):
    d[x] = unbroadcast(np.sum(d[y], axis=0), x)


@tangent(rtb.bexpand, "bexpand", shape_only=("size",))
def bexpand_t(y, x, size):
    t[y] = bexpand(t[x], size)


@adjoint(rtb.balign, "balign", shape_only=("peers", "flags"))
def balign(y, x, peers, flags):
    d[x] = np.reshape(d[y], np.shape(x))


@tangent(rtb.balign, "balign", shape_only=("peers", "flags"))
def balign_t(y, x, peers, flags):
    t[y] = balign(t[x], peers, flags)


@adjoint(rtb.bmatmul, "bmatmul", shape_only=("ab", "bb"))
def bmatmul(y, a, b, ab, bb):
    d[a] = bmatmul_vjp_a(d[y], a, b, ab, bb, False)
    d[b] = bmatmul_vjp_b(d[y], a, b, ab, bb, False)


@tangent(rtb.bmatmul, "bmatmul", shape_only=("ab", "bb"))
def bmatmul_t(y, a, b, ab, bb):
    t[y] = bmatmul(t[a], b, ab, bb) + bmatmul(a, t[b], ab, bb)


@adjoint(rtb.bunbroadcast, "bunbroadcast", shape_only=("x", "gb", "xb"))
def bunbroadcast(y, g, x, gb, xb):
    d[g] = bunbroadcast_vjp(d[y], g, gb, xb)


@tangent(rtb.bunbroadcast, "bunbroadcast", shape_only=("x", "gb", "xb"))
def bunbroadcast_t(y, g, x, gb, xb):
    t[y] = bunbroadcast(t[g], x, gb, xb)


register(rtb.bunbroadcast_vjp, "bunbroadcast_vjp")


@adjoint(rtb.bbroadcast_like, "bbroadcast_like", shape_only=("x", "gb", "xb"))
def bbroadcast_like(y, g, x, gb, xb):
    d[g] = bbroadcast_like_vjp(d[y], g, gb)


@tangent(rtb.bbroadcast_like, "bbroadcast_like", shape_only=("x", "gb", "xb"))
def bbroadcast_like_t(y, g, x, gb, xb):
    t[y] = bbroadcast_like(t[g], x, gb, xb)


register(rtb.bbroadcast_like_vjp, "bbroadcast_like_vjp")


@adjoint(rtb.bexpand_reduced, "bexpand_reduced", shape_only=("x", "gb", "xb"))
def bexpand_reduced(y, g, x, axis, keepdims, gb, xb):
    d[g] = bexpand_reduced_vjp(d[y], g, axis, keepdims, gb)


@tangent(rtb.bexpand_reduced, "bexpand_reduced", shape_only=("x", "gb", "xb"))
def bexpand_reduced_t(y, g, x, axis, keepdims, gb, xb):
    t[y] = bexpand_reduced(t[g], x, axis, keepdims, gb, xb)


register(rtb.bexpand_reduced_vjp, "bexpand_reduced_vjp")
nondiff(rt.check_unpack, "check_unpack")
nondiff(rt.check_rank, "check_rank")
nondiff(rt.check_array_output, "check_array_output")
nondiff(rt.check_unset, "check_unset")
nondiff(rt.check_unshared, "check_unshared")
nondiff(rt.check_element_view, "check_element_view")
nondiff(rt.check_row, "check_row")
nondiff(rt.check_nonempty, "check_nonempty")
nondiff(rt.check_not_held, "check_not_held")
refuse(rt.call_opaque, "call_opaque", "it calls code s2s cannot read (no Python source, or a library's) and has "
       "no derivative rule for, with a value that depends on the differentiated arguments")
refuse(rt.call_method, "call_method", "it calls a method s2s cannot read and has no derivative rule for, with a "
       "value that depends on the differentiated arguments")
nondiff(rt.list_position, "list_position")
for _fn in (rtf.fused_size, rtf.fused_empty, rtf.fused_grid, rtf.fused_zeros, rtf.flat_view, rtf.fused_out_view,
            rtf.elem):
    register(_fn, _fn.__name__)      # compiled backends only: fused code is not transformed again

# Side effects kept as the user wrote them (frontend/effects.py): no derivative, run in the forward sweep.
from ...runtime import effects as rte  # noqa: E402
for _fn in (rte.effect, rte.raise_block, rte.format_value, rte.with_start, rte.try_start, rte.region_end):
    nondiff(_fn, _fn.__name__)


# vmap: the batching kinds of the runtime's ops (rules/batch_rules.py)
declare(rt.tie_weight, batch="elementwise")
declare(rt.zeros_like, rt.stop_gradient, rt.copy_value, batch="same")
declare(rt.seed_cotangent, batch="seed")
declare(rt.unbroadcast, batch="unbroadcast")
declare(rt.broadcast_like, batch="broadcast_like")
declare(rt.expand_reduced, batch="expand_reduced")
# functions of shapes only: evaluated on the first example (the same for all)
declare(rtb.batch_size, rtb.baxis, rtb.ex_ndim, rt.reduced_size, rtb.breduced_size, rtb.bshape, rtb.bsize, rtb.blen,
        rt.inverse_axes, rt.fft_axes, rt.float_dtype_flag, rt.check_unpack, rt.check_rank, rt.check_array_output,
        rt.check_unset, rt.check_unshared, rt.check_element_view, rt.check_row, rt.check_nonempty,
        rt.check_not_held, rt.list_position, batch="shape_fn")
