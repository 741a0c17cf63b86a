"""Linear algebra: products, contractions, traces, diagonals and np.linalg.

Adjoint (d[x]) and tangent (t[x]) templates side by side; the shape
bookkeeping lives in ops/linalg/helpers.py and products_helpers.py.

Tuple-valued ops (np.linalg.slogdet, eigh, qr, and svd with compute_uv=True)
have templates written against the unpacked result: `y[k]` is the k-th output
and `d[y][k]` its cotangent; their tangents return the tuple of the outputs'
tangents.  Both modes differentiate through them; in reverse mode the
cotangent of the (named)tuple result is a list (runtime.zeros_like), which
`d[y][k] += ...` fills in place.
"""
import numpy as np

from . import helpers as lh
from . import products_helpers as ph
from . import sparse_helpers as sph
from .einsum_forms import call_form as einsum_call_form
from ...rules.registry import adjoint, declare, nondiff, register, tangent


@adjoint(np.matmul, "np.matmul")
def matmul(y, a, b):
    d[a] = matmul_vjp_a(d[y], a, b)
    d[b] = matmul_vjp_b(d[y], a, b)


@tangent(np.matmul)
def matmul_(y, a, b):
    t[y] = np.matmul(t[a], b) + np.matmul(a, t[b])


# Products with a scipy.sparse matrix the code reads (a constant): each op's adjoint is another
# (ops/linalg/sparse_helpers.py); the sparse operand has no derivative.
@adjoint(sph.sparse_matmul, "sparse_matmul")
def adj_sparse_matmul(y, a, x):
    d[x] = sparse_matmul_t(a, d[y])


@tangent(sph.sparse_matmul)
def tan_sparse_matmul(y, a, x):
    t[y] = sparse_matmul(a, t[x])


@adjoint(sph.sparse_matmul_t, "sparse_matmul_t")
def adj_sparse_matmul_t(y, a, g):
    d[g] = sparse_matmul(a, d[y])


@tangent(sph.sparse_matmul_t)
def tan_sparse_matmul_t(y, a, g):
    t[y] = sparse_matmul_t(a, t[g])


@adjoint(sph.sparse_rmatmul, "sparse_rmatmul")
def adj_sparse_rmatmul(y, x, b):
    d[x] = sparse_rmatmul_t(d[y], b)


@tangent(sph.sparse_rmatmul)
def tan_sparse_rmatmul(y, x, b):
    t[y] = sparse_rmatmul(t[x], b)


@adjoint(sph.sparse_rmatmul_t, "sparse_rmatmul_t")
def adj_sparse_rmatmul_t(y, g, b):
    d[g] = sparse_rmatmul(d[y], b)


@tangent(sph.sparse_rmatmul_t)
def tan_sparse_rmatmul_t(y, g, b):
    t[y] = sparse_rmatmul_t(t[g], b)


@adjoint(np.dot, "np.dot")
def dot(y, a, b):
    d[a] = dot_vjp_any_a(d[y], a, b)
    d[b] = dot_vjp_any_b(d[y], a, b)


@tangent(np.dot)
def dot_(y, a, b):
    t[y] = np.dot(t[a], b) + np.dot(a, t[b])


@adjoint(np.vdot, "np.vdot")
def vdot(y, a, b):
    d[a] = d[y] * np.reshape(b, np.shape(a))
    d[b] = d[y] * np.reshape(a, np.shape(b))


@tangent(np.vdot)
def vdot_(y, a, b):
    t[y] = np.vdot(t[a], b) + np.vdot(a, t[b])


@adjoint(np.inner, "np.inner")
def inner(y, a, b):
    d[a] = inner_vjp_a(d[y], a, b)
    d[b] = inner_vjp_b(d[y], a, b)


@tangent(np.inner)
def inner_(y, a, b):
    t[y] = np.inner(t[a], b) + np.inner(a, t[b])


@adjoint(np.outer, "np.outer")
def outer(y, a, b, out=None):
    d[a] = outer_vjp_a(d[y], a, b)
    d[b] = outer_vjp_b(d[y], a, b)


@tangent(np.outer)
def outer_(y, a, b, out=None):
    t[y] = np.outer(t[a], b) + np.outer(a, t[b])


@adjoint(np.tensordot, "np.tensordot")
def tensordot(y, a, b, axes=2):
    d[a] = tensordot_vjp_a(d[y], a, b, axes)
    d[b] = tensordot_vjp_b(d[y], a, b, axes)


@tangent(np.tensordot)
def tensordot_(y, a, b, axes=2):
    t[y] = np.tensordot(t[a], b, axes=axes) + np.tensordot(a, t[b], axes=axes)


# np.einsum(subscripts, a[, b[, c]]): up to three operands (the template binds them by position).
@adjoint(np.einsum, "np.einsum", shape_only=("subscripts",))
def einsum(y, subscripts, a, b=None, c=None, out=None, optimize=False):
    d[a] = einsum_vjp(d[y], subscripts, 0, a, b, c)
    d[b] = einsum_vjp(d[y], subscripts, 1, a, b, c)
    d[c] = einsum_vjp(d[y], subscripts, 2, a, b, c)


@tangent(np.einsum, shape_only=("subscripts",))
def einsum_(y, subscripts, a, b=None, c=None, out=None, optimize=False):
    t[y] = (einsum_operands(subscripts, t[a], b, c) + einsum_operands(subscripts, a, t[b], c)
            + einsum_operands(subscripts, a, b, t[c]))


@adjoint(np.kron, "np.kron")
def kron(y, a, b):
    d[a] = kron_vjp_a(d[y], a, b)
    d[b] = kron_vjp_b(d[y], a, b)


@tangent(np.kron)
def kron_(y, a, b):
    t[y] = np.kron(t[a], b) + np.kron(a, t[b])


# The products' cotangents are bilinear in (g, the other operand) and read their own operand's
# shape only: their derivatives are the products and cotangents again (no plan is differentiated).
@adjoint(ph.kron_vjp_a, "kron_vjp_a", shape_only=("a",))
def kron_vjp_a_rule(y, g, a, b):
    d[g] = np.kron(d[y], b)
    d[b] = kron_vjp_b(g, d[y], b)


@tangent(ph.kron_vjp_a, shape_only=("a",))
def kron_vjp_a_rule_(y, g, a, b):
    t[y] = kron_vjp_a(t[g], a, b) + kron_vjp_a(g, a, t[b])


@adjoint(ph.kron_vjp_b, "kron_vjp_b", shape_only=("b",))
def kron_vjp_b_rule(y, g, a, b):
    d[g] = np.kron(a, d[y])
    d[a] = kron_vjp_a(g, a, d[y])


@tangent(ph.kron_vjp_b, shape_only=("b",))
def kron_vjp_b_rule_(y, g, a, b):
    t[y] = kron_vjp_b(t[g], a, b) + kron_vjp_b(g, t[a], b)


@adjoint(ph.tensordot_vjp_a, "tensordot_vjp_a", shape_only=("a", "axes"))
def tensordot_vjp_a_rule(y, g, a, b, axes=2):
    d[g] = np.tensordot(d[y], b, axes=axes)
    d[b] = tensordot_vjp_b(g, d[y], b, axes)


@tangent(ph.tensordot_vjp_a, shape_only=("a", "axes"))
def tensordot_vjp_a_rule_(y, g, a, b, axes=2):
    t[y] = tensordot_vjp_a(t[g], a, b, axes) + tensordot_vjp_a(g, a, t[b], axes)


@adjoint(ph.tensordot_vjp_b, "tensordot_vjp_b", shape_only=("b", "axes"))
def tensordot_vjp_b_rule(y, g, a, b, axes=2):
    d[g] = np.tensordot(a, d[y], axes=axes)
    d[a] = tensordot_vjp_a(g, a, d[y], axes)


@tangent(ph.tensordot_vjp_b, shape_only=("b", "axes"))
def tensordot_vjp_b_rule_(y, g, a, b, axes=2):
    t[y] = tensordot_vjp_b(t[g], a, b, axes) + tensordot_vjp_b(g, t[a], b, axes)


@adjoint(np.cross, "np.cross")
def cross(y, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    d[a] = cross_vjp_a(d[y], a, b, axisa, axisb, axisc, axis)
    d[b] = cross_vjp_b(d[y], a, b, axisa, axisb, axisc, axis)


@tangent(np.cross)
def cross_(y, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    t[y] = np.cross(t[a], b, axisa, axisb, axisc, axis) + np.cross(a, t[b], axisa, axisb, axisc, axis)


@adjoint(np.trace, "np.trace")
def trace(y, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    d[a] = trace_vjp(d[y], a, offset, axis1, axis2)


@tangent(np.trace)
def trace_(y, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    t[y] = np.trace(t[a], offset, axis1, axis2)


@adjoint(np.diagonal, "np.diagonal")
def diagonal(y, a, offset=0, axis1=0, axis2=1):
    d[a] = diagonal_vjp(d[y], a, offset, axis1, axis2)


@tangent(np.diagonal)
def diagonal_(y, a, offset=0, axis1=0, axis2=1):
    t[y] = np.diagonal(t[a], offset, axis1, axis2)


# trace_vjp and diagonal_vjp put g on a diagonal: linear in g, transposed by trace / diagonal.
@adjoint(ph.trace_vjp, "trace_vjp", shape_only=("a", "offset", "axis1", "axis2"))
def trace_vjp_rule(y, g, a, offset=0, axis1=0, axis2=1):
    d[g] = np.trace(d[y], offset, axis1, axis2)


@tangent(ph.trace_vjp, shape_only=("a", "offset", "axis1", "axis2"))
def trace_vjp_rule_(y, g, a, offset=0, axis1=0, axis2=1):
    t[y] = trace_vjp(t[g], a, offset, axis1, axis2)


@adjoint(ph.diagonal_vjp, "diagonal_vjp", shape_only=("a", "offset", "axis1", "axis2"))
def diagonal_vjp_rule(y, g, a, offset=0, axis1=0, axis2=1):
    d[g] = np.diagonal(d[y], offset, axis1, axis2)


@tangent(ph.diagonal_vjp, shape_only=("a", "offset", "axis1", "axis2"))
def diagonal_vjp_rule_(y, g, a, offset=0, axis1=0, axis2=1):
    t[y] = diagonal_vjp(t[g], a, offset, axis1, axis2)


@adjoint(np.diag, "np.diag")
def diag(y, v, k=0):
    d[v] = diag_vjp(d[y], v, k)


@tangent(np.diag)
def diag_(y, v, k=0):
    t[y] = np.diag(t[v], k)


# ----- np.linalg ----------------------------------------------------------------


@adjoint(np.linalg.det, "np.linalg.det")
def det(y, a):
    d[a] = det_vjp(d[y], a, y)


@tangent(np.linalg.det)
def det_(y, a):
    t[y] = y * logdet_tangent(t[a], a)


@adjoint(np.linalg.inv, "np.linalg.inv")
def inv(y, a):
    d[a] = -np.matmul(np.swapaxes(y, -1, -2), np.matmul(d[y], np.swapaxes(y, -1, -2)))


@tangent(np.linalg.inv)
def inv_(y, a):
    t[y] = -np.matmul(y, np.matmul(t[a], y))


@adjoint(np.linalg.solve, "np.linalg.solve")
def solve(y, a, b):
    d[a] = solve_vjp_a(d[y], a, b, y)
    d[b] = solve_vjp_b(d[y], a, b)


@tangent(np.linalg.solve)
def solve_(y, a, b):
    t[y] = solve_tangent_a(t[a], a, b, y) + solve_like(a, t[b], b)


@adjoint(np.linalg.cholesky, "np.linalg.cholesky")
def cholesky(y, a, upper=False):
    d[a] = cholesky_vjp(d[y], y, upper)


@tangent(np.linalg.cholesky)
def cholesky_(y, a, upper=False):
    t[y] = cholesky_tangent(t[a], y, upper)


@adjoint(np.linalg.eigvalsh, "np.linalg.eigvalsh")
def eigvalsh(y, a, UPLO="L"):
    d[a] = eigvalsh_vjp(d[y], a, UPLO)


@tangent(np.linalg.eigvalsh)
def eigvalsh_(y, a, UPLO="L"):
    t[y] = eigvalsh_tangent(t[a], a, UPLO)


# np.linalg.svd(a, compute_uv=False) returns the singular values: one array, fully supported.
# With compute_uv=True it returns (u, s, vt): a tuple output (see the module docstring).
@adjoint(np.linalg.svd, "np.linalg.svd")
def svd(y, a, full_matrices=True, compute_uv=True, hermitian=False):
    d[a] = svd_vjp(d[y], a, y, full_matrices, compute_uv, hermitian)


@tangent(np.linalg.svd)
def svd_(y, a, full_matrices=True, compute_uv=True, hermitian=False):
    t[y] = svd_tangent(t[a], a, y, full_matrices, compute_uv, hermitian)


@adjoint(np.linalg.svdvals, "np.linalg.svdvals")
def svdvals(y, x):
    d[x] = svdvals_vjp(d[y], x)


@tangent(np.linalg.svdvals)
def svdvals_(y, x):
    t[y] = svdvals_tangent(t[x], x)


# U diag(g) V^T and diag(U^T ta V) are linear in g / ta and transposes of each other.
@adjoint(lh.svdvals_vjp, "svdvals_vjp")
def svdvals_vjp_rule(y, g, a):
    d[g] = svdvals_tangent(d[y], a)
    d[a] = svdvals_vjp_vjp_a(d[y], g, a)


@tangent(lh.svdvals_vjp)
def svdvals_vjp_rule_(y, g, a):
    t[y] = svdvals_vjp(t[g], a) + svdvals_vjp_tangent_a(t[a], g, a)


@adjoint(lh.svdvals_tangent, "svdvals_tangent")
def svdvals_tangent_rule(y, ta, a):
    d[ta] = svdvals_vjp(d[y], a)
    d[a] = svdvals_vjp_vjp_a(ta, d[y], a)


@tangent(lh.svdvals_tangent)
def svdvals_tangent_rule_(y, ta, a):
    t[y] = svdvals_tangent(t[ta], a) + svdvals_tangent_tangent_a(t[a], ta, a)


# V diag(g) V^T and diag(V^T sym(ta) V) (on the triangle eigvalsh reads) are transposes of each other.
@adjoint(lh.eigvalsh_vjp, "eigvalsh_vjp")
def eigvalsh_vjp_rule(y, g, a, UPLO="L"):
    d[g] = eigvalsh_tangent(d[y], a, UPLO)
    d[a] = eigvalsh_vjp_vjp_a(d[y], g, a, UPLO)


@tangent(lh.eigvalsh_vjp)
def eigvalsh_vjp_rule_(y, g, a, UPLO="L"):
    t[y] = eigvalsh_vjp(t[g], a, UPLO) + eigvalsh_vjp_tangent_a(t[a], g, a, UPLO)


@adjoint(lh.eigvalsh_tangent, "eigvalsh_tangent")
def eigvalsh_tangent_rule(y, ta, a, UPLO="L"):
    d[ta] = eigvalsh_vjp(d[y], a, UPLO)
    d[a] = eigvalsh_vjp_vjp_a(ta, d[y], a, UPLO)


@tangent(lh.eigvalsh_tangent)
def eigvalsh_tangent_rule_(y, ta, a, UPLO="L"):
    t[y] = eigvalsh_tangent(t[ta], a, UPLO) + eigvalsh_tangent_tangent_a(t[a], ta, a, UPLO)


# ----- tuple outputs (the core does not differentiate through these yet) ---------


@adjoint(np.linalg.slogdet, "np.linalg.slogdet")
def slogdet(y, a):
    d[a] = slogdet_vjp(d[y], a)


@tangent(np.linalg.slogdet)
def slogdet_(y, a):
    t[y] = slogdet_tangent(t[a], a, y)


@adjoint(np.linalg.eigh, "np.linalg.eigh")
def eigh(y, a, UPLO="L"):
    d[a] = eigh_vjp(d[y], a, y, UPLO)


@tangent(np.linalg.eigh)
def eigh_(y, a, UPLO="L"):
    t[y] = eigh_tangent(t[a], a, y, UPLO)


# Reduced QR of a tall or square matrix (other modes are refused by the signature).
@adjoint(np.linalg.qr, "np.linalg.qr")
def qr(y, a):
    d[a] = qr_vjp(d[y], a, y)


@tangent(np.linalg.qr)
def qr_(y, a):
    t[y] = qr_tangent(t[a], a, y)


# einsum_vjp (the cotangent of operand k) is linear in g and in each other operand: its tangent and
# cotangent rules are einsums again, so hessian and grad of grad call it (and jit compiles it) instead
# of differentiating its body (its plan is Python bookkeeping Numba cannot compile).
@adjoint(ph.einsum_vjp, "einsum_vjp", shape_only=("subscripts", "k"))
def einsum_vjp_rule(y, g, subscripts, k, a, b=None, c=None):
    d[g] = einsum_with(subscripts, k, d[y], a, b, c)
    d[a] = einsum_vjp_swap(g, subscripts, 0, k, d[y], a, b, c)
    d[b] = einsum_vjp_swap(g, subscripts, 1, k, d[y], a, b, c)
    d[c] = einsum_vjp_swap(g, subscripts, 2, k, d[y], a, b, c)


@tangent(ph.einsum_vjp, shape_only=("subscripts", "k"))
def einsum_vjp_rule_(y, g, subscripts, k, a, b=None, c=None):
    t[y] = (einsum_vjp(t[g], subscripts, k, a, b, c) + einsum_vjp_swap(g, subscripts, k, 0, t[a], a, b, c)
            + einsum_vjp_swap(g, subscripts, k, 1, t[b], a, b, c) + einsum_vjp_swap(g, subscripts, k, 2, t[c], a, b, c))


# ----- No derivative ----------------------------------------------------------

nondiff(np.linalg.matrix_rank, "np.linalg.matrix_rank")

for _fn in (lh.eye_like, lh.off_diagonal_inverse, ph.diag_mask, ph.sorted_axes_pair, ph.axes_pair,
            ph.diag_embedding, ph.tensordot_axes, ph.tensordot_vjp_plan, ph.dot_axes, ph.inner_axes,
            ph.kron_plan, ph.einsum_plan, ph.einsum_count, ph.cross_plan, ph.cross2_rotation):
    nondiff(_fn, _fn.__name__)
# Readable (differentiated through): the *_vjp_* / *_tangent helpers used above, einsum_operands,
# einsum_pick, solve_like, cholesky_*, triangle_from_symmetric, symmetric_from_triangle.


# Second derivatives through eigh's results (differentiating its adjoint's body) disagree
# with finite differences (hessian of the op sweep's eigh case: off by 0.3): the adjoint is
# registered without rules, so grad of grad, hessian and jacfwd/jacrev of its gradient are
# refused (NoRuleError) instead of answering wrongly.  slogdet's adjoint stays differentiable
# (its second derivatives are checked in the op sweep), and so does svd's (singular values:
# checked; with compute_uv=True the second derivatives fail loudly, see TUPLE_SECOND).
register(lh.eigh_vjp, "eigh_vjp")



# ----- np.linalg.eig / eigvals (s2s/ops/composite/rules.py defines them with these helpers) -------
# Real matrices with real eigenvalues (complex ones are refused at run time by the helpers).

@adjoint(lh.eig_values, "eig_values")
def eig_values_rule(y, a):
    d[a] = eigvals_vjp(d[y], a)


@tangent(lh.eig_values)
def eig_values_rule_(y, a):
    t[y] = eigvals_tangent(t[a], a)


@adjoint(lh.eig_vectors, "eig_vectors")
def eig_vectors_rule(y, a):
    d[a] = eig_vectors_vjp(d[y], a, y)


@tangent(lh.eig_vectors)
def eig_vectors_rule_(y, a):
    t[y] = eig_vectors_tangent(t[a], a, y)


# eigvals_vjp / eigvals_tangent are readable (their second derivatives come through eig_vectors'
# rules: V^-T diag(g) V^T does not depend on the eigenvectors' scale).  Like eigh_vjp, the
# eigenvector helpers use off_diagonal_inverse (no derivative): differentiating them would be
# wrong, so they are registered without rules and second derivatives through eig's v are refused.
register(lh.eig_vectors_vjp, "eig_vectors_vjp")
register(lh.eig_vectors_tangent, "eig_vectors_tangent")


# vmap: per-example matrix products; the plans read shapes and constant arguments only
declare(np.matmul, batch="matmul")
declare(np.dot, batch="dot")         # (np.dot of stacks is not matmul's product)
declare(np.einsum, call_form=einsum_call_form)    # (sublists, 4+ operands: the rule's one form)
declare(np.matmul, operator="MatMult")      # (`a @ b`)
declare(np.diagonal, view=True)      # (a view of its argument: analysis/aliasing.py)
declare(np.linalg.eigh, np.linalg.qr, np.linalg.svd, ragged_tuple=True)   # (vmap: per example)
# the namedtuples they return: `np.linalg.slogdet(a).logabsdet` is `np.linalg.slogdet(a)[1]`
declare(np.linalg.slogdet, result_fields=("sign", "logabsdet"))
declare(np.linalg.eigh, result_fields=("eigenvalues", "eigenvectors"))
declare(np.linalg.qr, result_fields=("Q", "R"))
declare(np.linalg.svd, result_fields=("U", "S", "Vh"))
declare(ph.einsum_plan, ph.kron_plan, ph.sorted_axes_pair, ph.axes_pair, ph.diag_mask, ph.diag_embedding,
        ph.tensordot_axes, ph.tensordot_vjp_plan, ph.dot_axes, ph.inner_axes, ph.cross_plan, batch="shape_fn")
# ndarray methods
for _fn, _methods in ((np.dot, ("dot",)), (np.trace, ("trace",)), (np.diagonal, ("diagonal",))):
    declare(_fn, methods=_methods)
