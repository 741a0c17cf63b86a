"""Op helpers of the np.linalg matrix functions (s2s/ops/linalg/rules.py; eig also ops/composite/rules.py).

The adjoints and tangents of det, slogdet, solve, cholesky, eigvalsh, eigh, eig / eigvals (of real
matrices with real eigenvalues: eig_values, eig_vectors), qr, svd and the singular values, and
their bookkeeping (eye_like, off_diagonal_inverse).  The products and diagonal ops (tensordot,
einsum, kron, cross, trace, ...) are in products_helpers.py.

Every public function here is called by name from generated code and is bookkeeping, readable or
ruled (the three kinds: rules/__init__.py).
"""
from __future__ import annotations

import numpy as np

from ...runtime import unbroadcast


def eye_like(a):
    """The identity matrix of the last two axes of a (float)."""
    return np.eye(np.shape(a)[-1])


def off_diagonal_inverse(w):
    """F[..., i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it (eigh, svd)."""
    w = np.asarray(w)
    diff = w[..., None, :] - w[..., :, None]
    n = w.shape[-1]
    eye = np.eye(n, dtype=bool)
    safe = np.where(eye, 1.0, diff)
    return np.where(eye, 0.0, 1.0 / safe)


# ----- linear algebra ----------------------------------------------------------

def det_vjp(g, a, y):
    return np.expand_dims(g * y, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


def logdet_tangent(ta, a):
    """d log|det a| along ta: trace(a^-1 ta)."""
    return np.trace(np.linalg.solve(a, ta), axis1=-2, axis2=-1)


def slogdet_vjp(g, a):
    """Cotangent of a from the cotangent pair g = (d sign, d logabsdet) of np.linalg.slogdet(a)."""
    glog = g[1]
    return np.expand_dims(glog, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


def slogdet_tangent(ta, a, y):
    """Tangent pair (d sign, d logabsdet) of np.linalg.slogdet(a)."""
    return (np.zeros_like(y[0]), logdet_tangent(ta, a))


def solve_like(a, rhs, b):
    """np.linalg.solve(a, rhs) with rhs read the way np.linalg.solve read b (vector if b is 1-d)."""
    if np.ndim(b) == 1:
        return np.linalg.solve(a, np.expand_dims(rhs, -1))[..., 0]
    return np.linalg.solve(a, rhs)


def solve_vjp_b(g, a, b):
    """Cotangent of b in y = np.linalg.solve(a, b)."""
    return unbroadcast(solve_like(np.swapaxes(a, -1, -2), g, b), b)


def solve_vjp_a(g, a, b, y):
    """Cotangent of a in y = np.linalg.solve(a, b)."""
    gb = solve_like(np.swapaxes(a, -1, -2), g, b)
    if np.ndim(b) == 1:
        return unbroadcast(-np.expand_dims(gb, -1) * np.expand_dims(y, -2), a)
    return unbroadcast(-np.matmul(gb, np.swapaxes(y, -1, -2)), a)


def solve_tangent_a(ta, a, b, y):
    """Tangent of y = np.linalg.solve(a, b) along a's tangent ta."""
    if np.ndim(b) == 1:
        return -solve_like(a, np.matmul(ta, np.expand_dims(y, -1))[..., 0], b)
    return -solve_like(a, np.matmul(ta, y), b)


def cholesky_vjp(g, L, upper=False):
    """Cotangent of a in L = np.linalg.cholesky(a, upper=upper).

    np.linalg.cholesky reads one triangle of a only, so the cotangent lives on
    that triangle: for a symmetric a built from x, chain rule gives the usual
    symmetric result.
    """
    if upper:
        return np.swapaxes(cholesky_vjp_lower(np.swapaxes(g, -1, -2), np.swapaxes(L, -1, -2)), -1, -2)
    return cholesky_vjp_lower(g, L)


def cholesky_vjp_lower(g, L):
    lt = np.swapaxes(L, -1, -2)
    p = np.tril(np.matmul(lt, g)) - 0.5 * np.matmul(lt, g) * eye_like(L)
    x1 = np.linalg.solve(lt, p)
    abar = np.swapaxes(np.linalg.solve(lt, np.swapaxes(x1, -1, -2)), -1, -2)
    return np.tril(abar + np.swapaxes(abar, -1, -2)) - abar * eye_like(L)


def cholesky_tangent(ta, L, upper=False):
    """Tangent of L = np.linalg.cholesky(a, upper=upper) along ta."""
    if upper:
        return np.swapaxes(cholesky_tangent_lower(np.swapaxes(ta, -1, -2), np.swapaxes(L, -1, -2)), -1, -2)
    return cholesky_tangent_lower(ta, L)


def cholesky_tangent_lower(ta, L):
    sym = np.tril(ta) + np.swapaxes(np.tril(ta, -1), -1, -2)
    x1 = np.linalg.solve(L, sym)
    z = np.swapaxes(np.linalg.solve(L, np.swapaxes(x1, -1, -2)), -1, -2)
    return np.matmul(L, np.tril(z) - 0.5 * z * eye_like(L))


def triangle_from_symmetric(s, lower=True):
    """Cotangent of a matrix of which only one triangle is read, from the cotangent s of its symmetric matrix."""
    t = s + np.swapaxes(s, -1, -2)
    if lower:
        return np.tril(t) - s * eye_like(s)
    return np.triu(t) - s * eye_like(s)


def symmetric_from_triangle(ta, lower=True):
    """The symmetric matrix that one triangle of ta stands for."""
    if lower:
        return np.tril(ta) + np.swapaxes(np.tril(ta, -1), -1, -2)
    return np.triu(ta) + np.swapaxes(np.triu(ta, 1), -1, -2)


def eigvalsh_vjp(g, a, UPLO="L"):  # noqa: N803
    """Cotangent of a in w = np.linalg.eigvalsh(a, UPLO): V diag(g) V^T on the triangle read (ruled)."""
    w, v = np.linalg.eigh(a, UPLO=UPLO)
    s = np.matmul(v * np.expand_dims(g, -2), np.swapaxes(v, -1, -2))
    return triangle_from_symmetric(s, UPLO == "L")


def eigvalsh_tangent(ta, a, UPLO="L"):  # noqa: N803
    """Tangent of w = np.linalg.eigvalsh(a, UPLO) along ta: diag(V^T sym(ta) V) (ruled)."""
    w, v = np.linalg.eigh(a, UPLO=UPLO)
    sym = symmetric_from_triangle(ta, UPLO == "L")
    return np.sum(v * np.matmul(sym, v), axis=-2)


def eigvalsh_vjp_tangent_a(ta, g, a, UPLO="L"):  # noqa: N803
    """Tangent of eigvalsh_vjp(g, a, UPLO) along a's tangent ta."""
    wv = np.linalg.eigh(a, UPLO=UPLO)
    v = wv[1]
    dv = eigh_tangent(ta, a, wv, UPLO)[1]
    m = np.matmul(dv * np.expand_dims(g, -2), np.swapaxes(v, -1, -2))
    return triangle_from_symmetric(m + np.swapaxes(m, -1, -2), UPLO == "L")


def eigvalsh_vjp_vjp_a(h, g, a, UPLO="L"):  # noqa: N803
    """Cotangent of a in Y = eigvalsh_vjp(g, a, UPLO) from Y's cotangent h."""
    wv = np.linalg.eigh(a, UPLO=UPLO)
    sym = symmetric_from_triangle(h, UPLO == "L")
    gv = 2.0 * np.matmul(sym, wv[1]) * np.expand_dims(g, -2)
    return eigh_vjp((np.zeros_like(wv[0]), gv), a, wv, UPLO)


def eigvalsh_tangent_tangent_a(tb, ta, a, UPLO="L"):  # noqa: N803
    """Tangent of diag(V^T sym(ta) V) (= eigvalsh_tangent(ta, a, UPLO)) along a's tangent tb."""
    wv = np.linalg.eigh(a, UPLO=UPLO)
    dv = eigh_tangent(tb, a, wv, UPLO)[1]
    sym = symmetric_from_triangle(ta, UPLO == "L")
    return 2.0 * np.sum(dv * np.matmul(sym, wv[1]), axis=-2)


def eigh_vjp(g, a, y, UPLO="L"):  # noqa: N803
    """Cotangent of a from the cotangent pair g = (dw, dv) of (w, v) = np.linalg.eigh(a, UPLO)."""
    gw = g[0]
    gv = g[1]
    w = y[0]
    v = y[1]
    vt = np.swapaxes(v, -1, -2)
    f = off_diagonal_inverse(w)
    inner = np.matmul(vt, gv)
    core = f * inner
    core = 0.5 * (core + np.swapaxes(core, -1, -2))
    mid = core + np.expand_dims(gw, -1) * eye_like(v)
    s = np.matmul(v, np.matmul(mid, vt))
    return triangle_from_symmetric(s, UPLO == "L")


def eigh_tangent(ta, a, y, UPLO="L"):  # noqa: N803
    """Tangent pair (dw, dv) of (w, v) = np.linalg.eigh(a, UPLO)."""
    w = y[0]
    v = y[1]
    vt = np.swapaxes(v, -1, -2)
    m = np.matmul(vt, np.matmul(symmetric_from_triangle(ta, UPLO == "L"), v))
    dw = np.diagonal(m, 0, -2, -1)
    dv = np.matmul(v, off_diagonal_inverse(w) * m)
    return (dw, dv)


# ----- np.linalg.eig / eigvals of real matrices with real eigenvalues (s2s/ops/composite/rules.py) -----
# A = V diag(w) V^-1: dw = diag(V^-1 dA V) (the left eigenvectors are the rows of V^-1); the
# eigenvectors (unit 2-norm columns, as NumPy gives them) move by dV = V (F * V^-1 dA V), less each
# column's component along itself (v_j . dv_j = 0 keeps |v_j| = 1), F_ij = 1 / (w_j - w_i).
# Values and vectors are two ops (one array each, so vmap's per-example loop can stack them), both
# from np.linalg.eig, so that their orders agree (np.linalg.eigvals may order them otherwise).

def _real_eig(a):
    w, v = np.linalg.eig(a)
    if np.iscomplexobj(w):
        raise ValueError("s2s: np.linalg.eig / eigvals gave complex eigenvalues here; s2s differentiates "
                         "real programs only (a matrix with real eigenvalues, e.g. a symmetric one: np.linalg.eigh)")
    return w, v


def eig_values(a):
    """The eigenvalues w of np.linalg.eig(a), a real matrix with real eigenvalues (ruled; complex
    eigenvalues are refused)."""
    return _real_eig(a)[0]


def eig_vectors(a):
    """The eigenvectors v of np.linalg.eig(a) (unit columns), a real matrix with real eigenvalues (ruled)."""
    return _real_eig(a)[1]


def eigvals_vjp(g, a):
    """Cotangent of a in w = eig_values(a): V^-T diag(g) V^T (readable)."""
    vt = np.swapaxes(eig_vectors(a), -1, -2)
    return np.linalg.solve(vt, np.expand_dims(g, -1) * vt)


def eigvals_tangent(ta, a):
    """Tangent of w = eig_values(a) along ta: diag(V^-1 ta V) (readable)."""
    v = eig_vectors(a)
    return np.diagonal(np.linalg.solve(v, np.matmul(ta, v)), 0, -2, -1)


def eig_vectors_vjp(g, a, v):
    """Cotangent of a in v = eig_vectors(a): V^-T (F * V^T (g - V diag(diag(V^T g)))) V^T."""
    w = eig_values(a)
    vt = np.swapaxes(v, -1, -2)
    gp = g - v * np.expand_dims(np.sum(v * g, axis=-2), -2)
    return np.linalg.solve(vt, np.matmul(off_diagonal_inverse(w) * np.matmul(vt, gp), vt))


def eig_vectors_tangent(ta, a, v):
    """Tangent of v = eig_vectors(a) along ta: V (F * V^-1 ta V), less each column's part along itself."""
    w = eig_values(a)
    dv = np.matmul(v, off_diagonal_inverse(w) * np.linalg.solve(v, np.matmul(ta, v)))
    return dv - v * np.expand_dims(np.sum(v * dv, axis=-2), -2)


def qr_vjp(g, a, y):
    """Cotangent of a from the cotangent pair g = (dq, dr) of (q, r) = np.linalg.qr(a) (reduced, m >= n)."""
    gq = g[0]
    gr = g[1]
    q = y[0]
    r = y[1]
    m = np.matmul(r, np.swapaxes(gr, -1, -2)) - np.matmul(np.swapaxes(gq, -1, -2), q)
    low = np.tril(m, -1)
    copyltu = low + np.swapaxes(low, -1, -2) + m * eye_like(m)
    rhs = gq + np.matmul(q, copyltu)
    return np.swapaxes(np.linalg.solve(r, np.swapaxes(rhs, -1, -2)), -1, -2)


def qr_tangent(ta, a, y):
    """Tangent pair (dq, dr) of (q, r) = np.linalg.qr(a) (reduced, m >= n)."""
    q = y[0]
    r = y[1]
    qt_da = np.matmul(np.swapaxes(q, -1, -2), ta)
    x = np.swapaxes(np.linalg.solve(np.swapaxes(r, -1, -2), np.swapaxes(qt_da, -1, -2)), -1, -2)
    low = np.tril(x, -1)
    omega = low - np.swapaxes(low, -1, -2)
    rest = ta - np.matmul(q, qt_da)
    dq = np.matmul(q, omega) + np.swapaxes(np.linalg.solve(np.swapaxes(r, -1, -2), np.swapaxes(rest, -1, -2)), -1, -2)
    dr = np.matmul(x - omega, r)
    return (dq, dr)


def svdvals_vjp(g, a):
    """Cotangent of a in s = np.linalg.svd(a, compute_uv=False): U diag(g) V^T (ruled)."""
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    return np.matmul(u * np.expand_dims(g, -2), vt)


def svdvals_tangent(ta, a):
    """Tangent of s = np.linalg.svd(a, compute_uv=False) along ta: diag(U^T ta V) (ruled)."""
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    return np.sum(u * np.matmul(ta, np.swapaxes(vt, -1, -2)), axis=-2)


def svdvals_tangent_tangent_a(tb, ta, a):
    """Tangent of diag(U^T ta V) (= svdvals_tangent(ta, a)) along a's tangent tb."""
    usv = np.linalg.svd(a, full_matrices=False)
    duv = svd_triple_tangent(tb, usv[0], usv[1], usv[2])
    v = np.swapaxes(usv[2], -1, -2)
    return np.sum(duv[0] * np.matmul(ta, v), axis=-2) + \
        np.sum(usv[0] * np.matmul(ta, np.swapaxes(duv[2], -1, -2)), axis=-2)


def svdvals_vjp_tangent_a(ta, g, a):
    """Tangent of U diag(g) V^T (= svdvals_vjp(g, a)) along a's tangent ta."""
    usv = np.linalg.svd(a, full_matrices=False)
    duv = svd_triple_tangent(ta, usv[0], usv[1], usv[2])
    gm = np.expand_dims(g, -2)
    return np.matmul(duv[0] * gm, usv[2]) + np.matmul(usv[0] * gm, duv[2])


def svdvals_vjp_vjp_a(h, g, a):
    """Cotangent of a in Y = U diag(g) V^T (= svdvals_vjp(g, a)) from Y's cotangent h."""
    usv = np.linalg.svd(a, full_matrices=False)
    gu = np.matmul(h, np.swapaxes(usv[2], -1, -2)) * np.expand_dims(g, -2)
    gvt = np.expand_dims(g, -1) * np.matmul(np.swapaxes(usv[0], -1, -2), h)
    return svd_triple_vjp(gu, np.zeros_like(usv[1]), gvt, usv[0], usv[1], usv[2])


def svd_vjp(g, a, y, full_matrices=True, compute_uv=True, hermitian=False):
    """Cotangent of a in y = np.linalg.svd(a, ...): singular values only, or the (u, s, vt) triple."""
    if not compute_uv:
        return svdvals_vjp(g, a)
    return svd_triple_vjp(g[0], g[1], g[2], y[0], y[1], y[2])


def svd_tangent(ta, a, y, full_matrices=True, compute_uv=True, hermitian=False):
    if not compute_uv:
        return svdvals_tangent(ta, a)
    return svd_triple_tangent(ta, y[0], y[1], y[2])


def svd_triple_vjp(gu, gs, gvt, u, s, vt):
    """Cotangent of a from (du, ds, dvt) of (u, s, vt) = np.linalg.svd(a) (Townsend's formula).

    Uses the first k = min(m, n) singular vectors (the cotangent of any extra
    columns of a full u or vt is ignored: those columns are not unique).
    """
    k = np.shape(s)[-1]
    u = u[..., :k]
    vt = vt[..., :k, :]
    gu = gu[..., :k]
    gvt = gvt[..., :k, :]
    v = np.swapaxes(vt, -1, -2)
    ut = np.swapaxes(u, -1, -2)
    eye = eye_like(np.expand_dims(s, -1) * np.expand_dims(s, -2))
    f = off_diagonal_inverse(s * s)
    utgu = np.matmul(ut, gu)
    vtgv = np.matmul(gvt, v)
    j = f * (utgu - np.swapaxes(utgu, -1, -2))
    kk = f * (np.swapaxes(vtgv, -1, -2) - vtgv)
    inner = j * np.expand_dims(s, -2) + np.expand_dims(gs, -1) * eye + np.expand_dims(s, -1) * kk
    out = np.matmul(u, np.matmul(inner, vt))
    sinv = 1.0 / s
    out = out + np.matmul(gu - np.matmul(u, utgu), np.expand_dims(sinv, -1) * vt)
    out = out + np.matmul(u * np.expand_dims(sinv, -2), gvt - np.matmul(np.matmul(gvt, v), vt))
    return out


def svd_triple_tangent(ta, u, s, vt):
    """Tangent triple (du, ds, dvt) of np.linalg.svd(a, full_matrices=False) along ta."""
    v = np.swapaxes(vt, -1, -2)
    ut = np.swapaxes(u, -1, -2)
    dp = np.matmul(ut, np.matmul(ta, v))
    ds = np.diagonal(dp, 0, -2, -1)
    cols = np.expand_dims(s, -2)
    rows = np.expand_dims(s, -1)
    f = off_diagonal_inverse(s * s)
    dpt = np.swapaxes(dp, -1, -2)
    su = f * (dp * cols + rows * dpt)
    sv = f * (rows * dp + dpt * cols)
    sinv = np.expand_dims(1.0 / s, -2)
    tat = np.swapaxes(ta, -1, -2)
    du = np.matmul(u, su) + np.matmul(ta - np.matmul(u, np.matmul(ut, ta)), v * sinv)
    dv = np.matmul(v, sv) + np.matmul(tat - np.matmul(v, np.matmul(vt, tat)), u * sinv)
    return (du, ds, np.swapaxes(dv, -1, -2))
