"""Op cases: reductions, linear algebra, shapes and joining (one small function per op; see op_cases.py).

Nothing here imports s2s: the functions run under plain NumPy."""
from __future__ import annotations

from cases.op_cases_base import *  # noqa: F401,F403  (the weights W..., K..., np, math, sp, case)
from cases.op_cases_base import _distinct, _nz, _sym_distinct, _u, _wellcond


# ===========================================================================
# Reductions
# ===========================================================================

@case(lambda r: (r.standard_normal((3, 4, 2)),))
def sum_case(x):
    return np.sum(x * x * W34x2) + np.sum(np.sum(x, axis=1) ** 2 * W32) + \
        np.sum(np.sum(x, axis=(0, 2), keepdims=True) * W4) + np.sum(x.sum(2) * W)


@case(lambda r: (r.standard_normal((3, 4, 2)),))
def mean_case(x):
    return np.mean(x * x * W34x2) + np.sum(np.mean(x, axis=-1) ** 2 * W) + \
        np.sum(np.mean(x, axis=(0, 1), keepdims=True) ** 2) + x.mean() ** 2


@case(lambda r: (_nz(r, (3, 4), 0.5, 1.5),))
def prod_case(x):
    return np.prod(x) + np.sum(np.prod(x, axis=1) * W3) + np.sum(np.prod(x, axis=0, keepdims=True) * W4) + \
        np.sum(x.prod(1) * W3)


@case(lambda r: (np.where(np.arange(12).reshape(3, 4) == 5, 0.0, _nz(r, (3, 4), 0.5, 1.5)),))
def prod_with_zero_case(x):
    return np.prod(x) + np.sum(np.prod(x, axis=1) * W3)


@case(lambda r: (_distinct(r, (3, 4, 2)),))
def max_case(x):
    return np.max(x) + np.sum(np.max(x, axis=1) * W32) + np.sum(np.max(x, axis=(0, 2), keepdims=True) * W4) + \
        np.sum(x.max(0) * W42)


@case(lambda r: (_distinct(r, (3, 4, 2)),))
def min_case(x):
    return np.min(x) + np.sum(np.min(x, axis=-1) * W) + np.sum(x.min(1) * W32)


@case(lambda r: (_distinct(r, (3, 4)),))
def amax_case(x):
    return np.sum(np.amax(x, axis=1) * W3) + np.amax(x)


@case(lambda r: (_distinct(r, (3, 4)),))
def amin_case(x):
    return np.sum(np.amin(x, axis=0) * W4) + np.amin(x)


@case(lambda r: (r.standard_normal((3, 4, 2)),))
def var_case(x):
    return np.var(x) + np.sum(np.var(x, axis=1) * W32) + np.sum(np.var(x, axis=0, ddof=1) * W42) + \
        np.sum(np.var(x, axis=(0, 2), keepdims=True) * W4) + x.var()


@case(lambda r: (r.standard_normal((3, 4, 2)),))
def std_case(x):
    return np.std(x) + np.sum(np.std(x, axis=1) * W32) + np.sum(np.std(x, axis=0, ddof=1) * W42) + \
        np.sum(x.std(axis=(0, 2), keepdims=True) * W4)


@case(lambda r: (r.standard_normal((3, 4)),))
def cumsum_case(x):
    return np.sum(np.cumsum(x, axis=1) ** 2 * W) + np.sum(np.cumsum(x) * W12) + np.sum(x.cumsum(0) * x * W)


@case(lambda r: (_nz(r, (3, 4), 0.5, 1.5),))
def cumprod_case(x):
    return np.sum(np.cumprod(x, axis=1) * W) + np.sum(np.cumprod(x) * W12) + np.sum(x.cumprod(0) * W)


@case(lambda r: (np.where(np.arange(12).reshape(3, 4) % 5 == 1, 0.0, _nz(r, (3, 4), 0.5, 1.5)),))
def cumprod_with_zero_case(x):
    return np.sum(np.cumprod(x, axis=1) * W) + np.sum(np.cumprod(x) * W12)


@case(lambda r: (r.standard_normal((3, 4)), _u(r, 0.5, 2.0, (4,))))
def average_case(x, w):
    return np.sum(np.average(x, axis=1, weights=w) * W3) + np.average(x) + \
        np.sum(np.average(x * x, axis=0, weights=x * x + 1.0, keepdims=True) * W4)


@case(lambda r: (_nz(r, (3, 4)),))
def norm_vector_case(x):
    v = x[0]
    return np.linalg.norm(x) + np.linalg.norm(v) * 2.0 + np.linalg.norm(v, 1) + np.linalg.norm(v, 3) \
        + np.sum(np.linalg.norm(x, axis=1) * W3) + np.sum(np.linalg.norm(x, 2, axis=0, keepdims=True) * W4) \
        + np.linalg.norm(v, 0) * np.sum(v) + np.linalg.norm(v, -1) + np.sum(np.linalg.norm(x, 1.5, axis=-1) * W3)


@case(lambda r: (_distinct(r, (3, 4)),))
def norm_inf_case(x):
    return np.linalg.norm(x[1], np.inf) + np.linalg.norm(x[2], -np.inf) + np.sum(np.linalg.norm(x, np.inf, axis=1) * W3)


@case(lambda r: (_distinct(r, (3, 4)) + 0.05,))
def norm_matrix_case(x):
    return np.linalg.norm(x, "fro") + np.linalg.norm(x, 1) * 2.0 + np.linalg.norm(x, np.inf) * 3.0 \
        + np.linalg.norm(x, -1) + np.linalg.norm(x, -np.inf)


@case(lambda r: (r.standard_normal((3, 4)),))
def norm_spectral_case(x):
    return np.linalg.norm(x, 2) + np.linalg.norm(x, "nuc") * 0.5 + np.linalg.norm(x, -2) * 0.25


@case(lambda r: (r.standard_normal((2, 3, 4)),))
def norm_batched_case(x):
    return np.sum(np.linalg.norm(x, axis=(1, 2)) * np.array([0.3, -1.2])) + \
        np.sum(np.linalg.norm(x, "fro", axis=(0, 2), keepdims=True) * K0)


# ===========================================================================
# Linear algebra
# ===========================================================================

@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 5))))
def matmul_case(a, b):
    return np.sum(np.matmul(a, b) * W35) + np.sum((a @ b) * W35 * 0.5)


@case(lambda r: (r.standard_normal((2, 3, 4)), r.standard_normal((4, 5)), r.standard_normal(4)))
def matmul_batched_vector_case(a, b, v):
    return np.sum(np.matmul(a, b) * W235) + np.sum(np.matmul(a, v) * W.T[:2, :3]) + np.sum(np.matmul(v, b) * W35[0])


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 5)), r.standard_normal(4)))
def dot_case(a, b, v):
    return np.sum(np.dot(a, b) * W35) + np.sum(np.dot(a, v) * W3) + np.dot(v, v) + np.sum(a.dot(b) * W35)


@case(lambda r: (r.standard_normal((2, 3, 4)), r.standard_normal((4, 5)), float(r.uniform(0.5, 1.5))))
def dot_nd_scalar_case(a, b, s):
    return np.sum(np.dot(a, b) * W235) + np.sum(np.dot(s, b) * W.T[:, :1])


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 3))))
def vdot_case(a, b):
    return np.vdot(a, b) * 2.0 + np.vdot(a, a)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((2, 4)), r.standard_normal(4)))
def inner_case(a, b, v):
    return np.sum(np.inner(a, b) * W32) + np.inner(v, v) + np.sum(np.inner(a, v) * W3)


@case(lambda r: (r.standard_normal(3), r.standard_normal((2, 2))))
def outer_case(a, b):
    return np.sum(np.outer(a, b) * W) + np.sum(np.outer(a, a) * W33)


@case(lambda r: (r.standard_normal((2, 3, 4)), r.standard_normal((4, 3, 5))))
def tensordot_case(a, b):
    return np.sum(np.tensordot(a, b, axes=([1, 2], [1, 0])) * W35[:2]) \
        + np.sum(np.tensordot(a, b, axes=1) * W35) + np.tensordot(a[0], b[:, :, 0].T, axes=2) * 1.5 \
        + np.sum(np.tensordot(a[0, 0], b[0, 0], axes=0) * W56[:4, :5])


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 5)), r.standard_normal((5, 2))))
def einsum_case(a, b, c):
    return np.sum(np.einsum("ij,jk->ik", a, b) * W35) + np.einsum("ij,jk,kl->", a, b, c) \
        + np.sum(np.einsum("ij->j", a) * W4) + np.einsum("ij,ij", a, a) + np.sum(np.einsum("ji", a) * W43)


@case(lambda r: (r.standard_normal((3, 3)), r.standard_normal((2, 3, 4)), r.standard_normal((4, 5))))
def einsum_trace_ellipsis_case(s, a, b):
    return np.einsum("ii->", s) + np.sum(np.einsum("ii->i", s) * W3) + \
        np.sum(np.einsum("...ij,jk->...ik", a, b) * W235) + np.sum(np.einsum("bij,jk", a, b) * W235)


@case(lambda r: (r.standard_normal((2, 3)), r.standard_normal((3, 2)), r.standard_normal(2)))
def kron_case(a, b, v):
    return np.sum(np.kron(a, b) * W68[:, :6]) + np.sum(np.kron(v, b) * W64[:3]) + np.sum(np.kron(v, v) * W4)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((2, 3, 3))))
def trace_case(a, t):
    return np.trace(a) * 2.0 + np.trace(a, 1) + np.trace(a, -1) + np.sum(np.trace(t, axis1=1, axis2=2) * W3[:2]) \
        + a.trace()


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal(3)))
def diag_case(a, v):
    return np.sum(np.diag(a) * W3) + np.sum(np.diag(a, 1) * W3) + np.sum(np.diag(v) * W33) + np.sum(np.diag(v, 1) * K1)


@case(lambda r: (r.standard_normal((2, 3, 4)),))
def diagonal_case(a):
    return np.sum(np.diagonal(a, 0, 1, 2) * W32.T) + np.sum(np.diagonal(a, 1, 2, 0) * W33[:, :1].T[:, :1]) \
        + np.sum(a[0].diagonal() * W3)


@case(lambda r: (_wellcond(r),))
def det_case(a):
    return np.linalg.det(a) + np.linalg.det(a @ a.T) * 0.1


@case(lambda r: (_wellcond(r, 3, (2,)),))
def det_batched_case(a):
    return np.sum(np.linalg.det(a) * np.array([0.7, -1.3]))


@case(lambda r: (_wellcond(r),))
def slogdet_case(a):
    return np.linalg.slogdet(a)[1] + np.linalg.slogdet(a)[0] * 0.0


@case(lambda r: (_wellcond(r),))
def inv_case(a):
    return np.sum(np.linalg.inv(a) * W33)


@case(lambda r: (_wellcond(r), r.standard_normal((3, 2)), r.standard_normal(3)))
def solve_case(a, b, v):
    return np.sum(np.linalg.solve(a, b) * W32) + np.sum(np.linalg.solve(a, v) * W3)


@case(lambda r: (_wellcond(r, 3, (2,)), r.standard_normal((2, 3, 4))))
def solve_batched_case(a, b):
    return np.sum(np.linalg.solve(a, b) * W234)


@case(lambda r: (r.standard_normal((3, 3)) * 0.5,))
def cholesky_case(x):
    a = x @ x.T + 2.0 * np.eye(3)
    return np.sum(np.linalg.cholesky(a) * W33) + np.sum(np.linalg.cholesky(a, upper=True) * W33.T)


@case(lambda r: (_wellcond(r) + 2.0 * np.eye(3),))
def cholesky_one_triangle_case(a):
    return np.sum(np.linalg.cholesky(a) * W33)


@case(lambda r: (_sym_distinct(r) + 0.05 * r.standard_normal((3, 3)),))
def eigvalsh_case(a):
    return np.sum(np.linalg.eigvalsh(a) * W3) + np.sum(np.linalg.eigvalsh(a, UPLO="U") * W3[::-1])


@case(lambda r: (_sym_distinct(r),), hess_xfail=TUPLE_SECOND, rr_xfail=TUPLE_SECOND)
def eigh_case(a):
    wv = np.linalg.eigh(a)
    return np.sum(wv[0] * W3) + np.sum(np.abs(wv[1][0]) * W3)


@case(lambda r: (r.standard_normal((4, 3)),))
def qr_case(a):
    qr = np.linalg.qr(a)
    return np.sum(qr[0] * W43) + np.sum(qr[1] * W33)


@case(lambda r: (r.standard_normal((4, 3)),))
def svd_values_case(a):
    return np.sum(np.linalg.svd(a, compute_uv=False) * W3) + np.sum(np.linalg.svdvals(a.T) * W3)


@case(lambda r: (r.standard_normal((4, 3)),), hess_xfail=TUPLE_SECOND, rr_xfail=TUPLE_SECOND)
def svd_case(a):
    usv = np.linalg.svd(a, full_matrices=False)
    return np.sum(usv[1] * W3) + np.sum(usv[0][:, 0] * usv[2][0, 0] * W4)


@case(lambda r: (r.standard_normal((4, 3)), r.standard_normal(3)))
def cross_case(a, b):
    return np.sum(np.cross(a, b) * W43) + np.sum(np.cross(a.T, b, axisa=0) * W43) + \
        np.sum(np.cross(a.T, b, axisa=0, axisc=0) * W43.T)


# ===========================================================================
# Shape and joining
# ===========================================================================

@case(lambda r: (r.standard_normal((3, 4)),))
def reshape_case(x):
    return np.sum(np.reshape(x, (4, 3)) * W43) + np.sum(x.reshape(2, 6) ** 2 * K2) + \
        np.sum(np.reshape(x, (12,), order="F") * W12) + np.sum(x.reshape((-1, 2)) * K3)


@case(lambda r: (r.standard_normal((3, 4)),))
def ravel_flatten_case(x):
    return np.sum(np.ravel(x) * W12) + np.sum(x.ravel() ** 2 * W12) + np.sum(x.flatten() * x.flatten() * W12)


@case(lambda r: (r.standard_normal((2, 3, 4)),))
def transpose_case(x):
    return np.sum(np.transpose(x, (2, 0, 1)) * K4) + np.sum(x.T * W234.T) + \
        np.sum(x.transpose(1, 0, 2) ** 2 * K5) + np.sum(x[0].T * W43)


@case(lambda r: (r.standard_normal((2, 3, 4)),))
def swapaxes_moveaxis_case(x):
    return np.sum(np.swapaxes(x, 0, 2) * W234.T) + np.sum(x.swapaxes(1, 2) ** 2 * K6) + \
        np.sum(np.moveaxis(x, 0, -1) * K8) + \
        np.sum(np.moveaxis(x, (0, 1), (2, 0)) * K8)


@case(lambda r: (r.standard_normal((3, 4)),))
def expand_squeeze_case(x):
    e = np.expand_dims(x, 1)
    return np.sum(e * K9) + np.sum(np.squeeze(e) ** 2 * W) + np.sum(np.squeeze(e, axis=1) * W) \
        + np.sum(np.expand_dims(x, (0, 3)) * K10) + np.sum(e.squeeze() * W)


@case(lambda r: (r.standard_normal((3, 1)), r.standard_normal(4)))
def broadcast_to_case(a, b):
    return np.sum(np.broadcast_to(a, (3, 4)) * W) + np.sum(np.broadcast_to(b, (2, 3, 4)) * W234)


@case(lambda r: (float(r.uniform(0.5, 1.5)), r.standard_normal(4), r.standard_normal((3, 4))))
def atleast_case(s, v, m):
    return np.sum(np.atleast_1d(s) * 2.0) + np.sum(np.atleast_2d(v) * W4) + np.sum(np.atleast_3d(m) * K11) \
        + np.sum(np.atleast_2d(m) * W) + np.sum(np.atleast_1d(v) * W4)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal(2)))
def tile_case(x, v):
    return np.sum(np.tile(x, (2, 2)) * W68) + np.sum(np.tile(v, 3) * K12) + \
        np.sum(np.tile(v, (3, 2)) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def repeat_case(x):
    return np.sum(np.repeat(x, 2, axis=1) * W38) + np.sum(np.repeat(x, 2) * K13) + \
        np.sum(np.repeat(x, REPS, axis=1) * K14) + \
        np.sum(np.repeat(x[0], REPS) * K15)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((2, 4)), r.standard_normal(4)))
def concatenate_case(a, b, v):
    return np.sum(np.concatenate([a, b], axis=0) * K16) + \
        np.sum(np.concatenate((a, a * 2.0), axis=1) * W38) + np.sum(np.concatenate([v, a[0]]) * K17) \
        + np.sum(np.concatenate([a, b], axis=None) * K18)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 4))))
def stack_case(a, b):
    return np.sum(np.stack([a, b]) * W234) + np.sum(np.stack((a, b, a), axis=-1) * K7)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 2)), r.standard_normal(4)))
def hstack_vstack_case(a, b, v):
    return np.sum(np.hstack([a, b]) * K19) + np.sum(np.hstack((v, v)) * K17) \
        + np.sum(np.vstack([a, v]) * K20) + np.sum(np.vstack((v, v)) * W24)


@case(lambda r: (r.standard_normal(3), r.standard_normal((3, 2))))
def column_stack_case(v, b):
    return np.sum(np.column_stack([v, b]) * W33) + np.sum(np.column_stack((v, v)) * W32)


@case(lambda r: (r.standard_normal((4, 3)),))
def split_case(x):
    parts = np.split(x, 2)
    return np.sum(parts[0] * W33[:2]) + np.sum(parts[1] ** 2 * W33[1:])


@case(lambda r: (r.standard_normal((3, 5)),))
def array_split_case(x):
    parts = np.array_split(x, 3, axis=1)
    return np.sum(parts[0] * W32) + np.sum(parts[2] ** 2 * K22)


@case(lambda r: (r.standard_normal((3, 4)),))
def flip_case(x):
    return np.sum(np.flip(x) * W) + np.sum(np.flip(x, 1) ** 2 * W) + np.sum(np.fliplr(x) * W) + np.sum(np.flipud(x) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def roll_case(x):
    return np.sum(np.roll(x, 1) * W) + np.sum(np.roll(x, -2, axis=1) ** 2 * W) + np.sum(np.roll(x, (1, 2), axis=(0, 1)) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def rot90_case(x):
    return np.sum(np.rot90(x) * W43) + np.sum(np.rot90(x, 2) * W) + np.sum(np.rot90(x, -1, axes=(1, 0)) * W43)


@case(lambda r: (r.standard_normal((3, 4)),))
def tril_triu_case(x):
    return np.sum(np.tril(x) * W) + np.sum(np.triu(x, 1) ** 2 * W) + np.sum(np.tril(x, -1) * np.triu(x) * W)


@case(lambda r: (r.standard_normal((3, 4)), float(r.uniform(0.5, 1.5))))
def pad_case(x, c):
    return np.sum(np.pad(x, 1) * W56) + np.sum(np.pad(x, ((0, 2), (1, 0)), mode="reflect") * W56[:, :5]) \
        + np.sum(np.pad(x, ((1, 1), (0, 0)), constant_values=c) * K16 * c) \
        + np.sum(np.pad(x, ((2, 0), (1, 1)), mode="edge") * W56[:5]) + np.sum(np.pad(x, 1, mode="wrap") * W56)


@case(lambda r: (_distinct(r),))
def sort_case(x):
    return np.sum(np.sort(x) * W) + np.sum(np.sort(x, axis=0) ** 2 * W) + np.sum(np.sort(x, axis=None) * W12)


@case(lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 1))))
def diff_case(x, p):
    return np.sum(np.diff(x) * W[:, :3]) + np.sum(np.diff(x, n=2, axis=1) ** 2 * W[:, :2]) + \
        np.sum(np.diff(x, axis=0) * W[:2]) + np.sum(np.diff(x, prepend=p) * W) + np.sum(np.diff(x, append=1.0) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def take_case(x):
    return np.sum(np.take(x, IDX) * W4[:1]) + np.sum(np.take(x, IDX, axis=1) * W35) + \
        np.sum(np.take(x, IDX2, axis=1) ** 2 * K21) + np.sum(np.take(x, 5) * 2.0)


@case(lambda r: (r.standard_normal((3, 4)),))
def take_along_axis_case(x):
    return np.sum(np.take_along_axis(x, IDX2, axis=1) * W32) + \
        np.sum(np.take_along_axis(x, np.argsort(x, axis=0), axis=0) * W)


@case(lambda r: (r.standard_normal((3, 4)),))
def copy_astype_case(x):
    y = np.copy(x)
    return np.sum(y * y * W) + np.sum(x.copy() ** 2 * W) + np.sum(x.astype(np.float64) * W) + \
        np.sum(x.astype(int) * x * W) + np.sum(np.asarray(x) * W)


@case(lambda r: (r.standard_normal(3), float(r.uniform(0.5, 1.5))))
def array_of_list_case(v, s):
    m = np.array([v, v * s, v * 2.0])
    return np.sum(m * W33) + np.sum(np.array([s, s * s, 1.0]) * W3) + np.sum(np.array(v) * W3)


@case(lambda r: (r.standard_normal((3, 4)),))
def constructors_case(x):
    z = np.zeros((3, 4)) + np.ones_like(x) * 0.5 + np.full((3, 4), 0.25) + np.eye(3, 4) + np.arange(4.0)
    return np.sum((x + z) * x * W) + np.sum(np.linspace(0.0, 1.0, 4) * x[0]) + np.sum(np.zeros_like(x) * x)


@case(lambda r: (_distinct(r),))
def comparisons_argfuncs_case(x):
    m = (x > 0.1) & (x <= 1.5) | np.isnan(x)
    i = np.argmax(x[0])
    j = np.argmin(x[1])
    return np.sum(np.where(m, x, 0.0) * W) + x[0, i] * 2.0 + x[1, j] + \
        np.sum(np.where(np.isfinite(x), x * x, 0.0) * W) + np.sum(x * np.logical_not(x > 0.5) * W)
