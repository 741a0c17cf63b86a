"""Library calls as users write them: NumPy, SciPy, scikit-learn and statsmodels.

Each case is a module-level function (s2s reads its source) that calls a library function the way
user code does and returns a scalar float, smooth at the inputs its factory draws (no ties, no
points on a kink, probabilities inside (0, 1), matrices well conditioned). Data that is not
differentiated is a module-level constant.

`CASES` lists `(name, fn, make_args)` triples: `make_args()` returns a fresh tuple of arguments
(small shapes, drawn from a seeded `np.random.default_rng`). `ARGNUMS` names the cases that
differentiate an argument other than the first; `argnum(name)` gives it (0 by default).

Nothing here imports s2s: every function runs under plain NumPy/SciPy/scikit-learn/statsmodels.
"""
from __future__ import annotations

import numpy as np
import scipy.interpolate
import scipy.linalg
import scipy.optimize
import scipy.signal
import scipy.special
import scipy.stats
import sklearn.gaussian_process.kernels
import sklearn.metrics
import sklearn.metrics.pairwise
import sklearn.preprocessing
import statsmodels.stats.moment_helpers
import statsmodels.tools.eval_measures
import statsmodels.tools.tools


def _rng(seed):
    return np.random.default_rng(seed)


def _spd(n, seed):
    a = _rng(seed).standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def _wellcond(n, seed):
    return _rng(seed).standard_normal((n, n)) + 3.0 * np.eye(n)


def _distinct(shape, seed, spread=0.3):
    """Values at least `spread` apart in the flattened order (no ties), shuffled."""
    r = _rng(seed)
    size = int(np.prod(shape))
    vals = spread * np.arange(size) - spread * size / 2 + 0.05 + 0.1 * r.random(size) * spread
    return r.permutation(vals).reshape(shape)


# ----- fixed data (not differentiated) --------------------------------------------------------
_C = _rng(1000)
W3 = _C.standard_normal(3)
W4 = _C.standard_normal(4)
W5 = _C.standard_normal(5)
W6 = _C.standard_normal(6)
W33 = _C.standard_normal((3, 3))
W34 = _C.standard_normal((3, 4))
W44 = _C.standard_normal((4, 4))
W53 = _C.standard_normal((5, 3))
A33 = _C.standard_normal((3, 3))
B33 = _C.standard_normal((3, 3))
A53 = _C.standard_normal((5, 3))
B34 = _C.standard_normal((3, 4))
B43 = _C.standard_normal((4, 3))
B22 = _C.standard_normal((2, 2))
C22 = _C.standard_normal((2, 2))
V5 = _C.standard_normal(5)
V4 = _C.standard_normal(4)
V3 = _C.standard_normal(3)
WPOS5 = _C.random(5) + 0.5
WPOS3 = _C.random(3) + 0.5
X_GRID = np.array([0.0, 0.4, 0.9, 1.5, 2.0, 2.6])            # uneven sample points
XP = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])                  # interpolation knots
XQ = np.array([0.3, 1.45, 2.7, 3.2, 4.85])                     # query points, off the knots
P_COEF = np.array([0.5, -1.0, 2.0, 0.3])
KERNEL = np.array([0.25, 0.5, -0.75])
SPD3 = _spd(3, 1001)
L3 = np.tril(_C.standard_normal((3, 3))) + 3.0 * np.eye(3)
MU3 = np.array([0.1, -0.2, 0.3])
COV3 = _spd(3, 1002) / 3.0
Q5 = _C.random(5) + 0.2                                        # positive weights for stats.entropy
Y_TRUE = np.array([0, 1, 1, 0, 1, 0])
Y_REG = _C.standard_normal(6)
Y_MC = np.array([0, 2, 1, 2])                                  # multiclass labels, 3 classes
X_DATA = _C.standard_normal((6, 3))
Y_DATA = X_DATA @ np.array([1.0, -2.0, 0.5]) + 0.3 + 0.1 * _C.standard_normal(6)
X_REF = _C.standard_normal((4, 3)) * 2.0                       # reference points (no coincidences)


# ===== NumPy ==================================================================================
def cov_trace(x):                  # x: (3, 5), rows are variables
    return np.trace(np.cov(x))


def cov_weighted_sum(x):           # x: (5, 3), rowvar=False: rows are observations
    return np.sum(np.cov(x, rowvar=False) * W33)


def corrcoef_sum(x):               # x: (3, 5)
    return np.sum(np.corrcoef(x) * W33)


def ptp_sq(x):                     # x: (4, 3), distinct values
    return np.sum(np.ptp(x, axis=0) ** 2)


def trapezoid_sin(y):              # y: (6,)
    return np.trapezoid(np.sin(y) * y, X_GRID)


def trapezoid_dx(y):               # y: (3, 6)
    return np.sum(np.trapezoid(y ** 2, dx=0.5, axis=1) * W3)


def polyval_coeffs(p):             # p: (4,) polynomial coefficients
    return np.sum(np.polyval(p, XQ) ** 2)


def polyval_points(x):             # x: (5,)
    return np.sum(np.polyval(P_COEF, x) * W5)


def vander_product(x):             # x: (5,)
    return np.sum((np.vander(x, 4) @ W4) ** 2)


def meshgrid_surface(x):           # x: (4,)
    xx, yy = np.meshgrid(x, V3)
    return np.sum(np.sin(xx) * yy + xx ** 2)


def block_matrix(a):               # a: (2, 2)
    m = np.block([[a, B22], [C22, a.T]])
    return np.sum(m * W44) + np.sum(m ** 2)


def matrix_power_trace(a):         # a: (3, 3)
    return np.trace(np.linalg.matrix_power(a, 3))


def multi_dot_sum(x):              # x: (3, 4)
    return np.sum(np.linalg.multi_dot([A33, x, B43, W33]))


def append_weighted(x):            # x: (3,)
    return np.sum(np.append(x, V3) ** 2 * W6)


def gradient_energy(x):            # x: (6,)
    return np.sum(np.gradient(x) ** 2 * W6)


def gradient_spacing(x):           # x: (6,) on the uneven grid X_GRID
    return np.sum(np.gradient(x, X_GRID) * W6)


def real_if_close_sq(x):           # x: (5,), real input passes through
    return np.sum(np.real_if_close(x) ** 2 * W5)


def average_weighted(x):           # x: (5,)
    return np.average(np.sin(x), weights=WPOS5)


def average_axis(x):               # x: (5, 3)
    return np.sum(np.average(x ** 2, axis=0, weights=WPOS5) * W3)


def convolve_full(x):              # x: (5,)
    return np.sum(np.convolve(x, KERNEL) ** 2)


def convolve_valid(x):             # x: (6,)
    return np.sum(np.convolve(x, KERNEL, mode="valid") * W4)


def lstsq_rhs(b):                  # b: (5,)
    coef = np.linalg.lstsq(A53, b, rcond=None)[0]
    return np.sum(coef ** 2)


def lstsq_matrix(a):               # a: (5, 3)
    coef, res, rank, sv = np.linalg.lstsq(a, V5, rcond=None)
    return np.sum(coef * W3)


def interp_values(fp):             # fp: (6,), the values at XP
    return np.sum(np.interp(XQ, XP, fp) ** 2)


def interp_query(x):               # x: (5,), query points away from the knots
    return np.sum(np.interp(x, XP, np.sin(XP)))


def kron_sq(a):                    # a: (2, 2)
    return np.sum(np.kron(a, B22) ** 2 * W44)


def diff_second(x):                # x: (6,)
    return np.sum(np.diff(x, n=2) ** 2)


def cumsum_weighted(x):            # x: (3, 4)
    return np.sum(np.cumsum(x, axis=1) * W34)


def cumprod_sum(x):                # x: (5,)
    return np.sum(np.cumprod(x))


def einsum_trace3(a):              # a: (3, 3)
    return np.einsum("ij,jk,ki->", a, A33, B33)


def einsum_batched(x):             # x: (2, 3, 4)
    y = np.einsum("bij,jk->bik", x, B43)
    return np.einsum("bik,ik->", y, W33)


def norm_vector(x):                # x: (5,)
    return np.linalg.norm(x)


def norm_rows(x):                  # x: (4, 3)
    return np.sum(np.linalg.norm(x, axis=1) * W4)


def norm_fro(a):                   # a: (3, 3)
    return np.linalg.norm(a, "fro")


def solve_sum(a):                  # a: (3, 3) well conditioned
    return np.sum(np.linalg.solve(a, V3) * W3)


def det_of(a):                     # a: (3, 3)
    return np.linalg.det(a)


def slogdet_logabs(a):             # a: (3, 3)
    sign, logdet = np.linalg.slogdet(a)
    return logdet


def inv_trace(a):                  # a: (3, 3)
    return np.trace(np.linalg.inv(a) @ B33)


def outer_weighted(x):             # x: (3,)
    return np.sum(np.outer(x, V4) * W34) + np.sum(np.outer(x, x) ** 2)


def tril_triu(a):                  # a: (3, 3)
    return np.sum(np.tril(a) ** 2) + np.sum(np.triu(a, 1) * W33)


def where_branches(x):             # x: (5,), away from 0
    return np.sum(np.where(x > 0, x ** 2, np.sin(x)))


def clip_sq(x):                    # x: (6,), away from +-0.5
    return np.sum(np.clip(x, -0.5, 0.5) ** 2 + x)


def sort_weighted(x):              # x: (5,), distinct
    return np.sum(np.sort(x) * W5)


def percentile_30(x):              # x: (6,), distinct
    return np.percentile(x, 30)


def quantile_axis(x):              # x: (5, 3), distinct
    return np.sum(np.quantile(x, [0.25, 0.75], axis=0) * np.array([1.0, 2.0])[:, None])


def median_odd(x):                 # x: (5,), distinct
    return np.median(x) + np.mean(x)


def var_ddof(x):                   # x: (6,)
    return np.var(x, ddof=1)


def std_axis_ddof(x):              # x: (5, 3)
    return np.sum(np.std(x, axis=0, ddof=1) * W3)


def logaddexp_sum(x):              # x: (5,)
    return np.sum(np.logaddexp(x, V5))


def hypot_sum(x):                  # x: (5,)
    return np.sum(np.hypot(x, V5))


def sinc_sum(x):                   # x: (5,), away from 0
    return np.sum(np.sinc(x) * W5)


def i0_sum(x):                     # x: (5,)
    return np.sum(np.i0(x))


def nan_to_num_log(x):             # x: (5,) positive
    return np.sum(np.nan_to_num(np.log(x)) * W5)


def eigh_weighted(a):              # a: (3, 3), symmetrised inside; distinct eigenvalues
    w, v = np.linalg.eigh(a + a.T)
    return np.sum(w * W3)


def eigvalsh_max(a):               # a: (3, 3)
    return np.max(np.linalg.eigvalsh(a @ a.T + np.eye(3)))


def svd_nuclear(a):                # a: (3, 3)
    return np.linalg.norm(a, "nuc")


def svd_values(a):                 # a: (4, 3)
    s = np.linalg.svd(a, compute_uv=False)
    return np.sum(s * W3)


def cholesky_logdet(a):            # a: (3, 3); a @ a.T + 3 I is SPD
    chol = np.linalg.cholesky(a @ a.T + 3.0 * np.eye(3))
    return 2.0 * np.sum(np.log(np.diag(chol)))


def qr_r_diag(a):                  # a: (4, 3)
    q, r = np.linalg.qr(a)
    return np.sum(np.abs(np.diag(r)))


def pinv_sum(a):                   # a: (4, 3)
    return np.sum(np.linalg.pinv(a) * W34)


def tensordot_sum(x):              # x: (3, 4)
    return np.sum(np.tensordot(x, B43, axes=1) ** 2)


def inner_cross(x):                # x: (3,)
    return np.inner(x, V3) + np.sum(np.cross(x, V3) ** 2)


def stack_concat(x):               # x: (3,)
    s = np.stack([x, np.sin(x), V3])
    c = np.concatenate([x, x ** 2])
    return np.sum(s * W33) + np.sum(c * W6)


def roll_flip_tile(x):             # x: (4,)
    y = np.roll(x, 1) * np.flip(x)
    return np.sum(np.tile(y, 2) * np.repeat(x, 2))


def prod_axis(x):                  # x: (3, 4)
    return np.sum(np.prod(x, axis=1))


def rfft_power(x):                 # x: (6,)
    return np.sum(np.abs(np.fft.rfft(x)) ** 2)


def polyfit_coeffs(y):             # y: (6,), fit a quadratic through (X_GRID, y)
    return np.sum(np.polyfit(X_GRID, y, 2) * W3)


def arctan2_expm1(x):              # x: (5,)
    return np.sum(np.arctan2(x, V5 + 2.0) + np.expm1(0.3 * x) + np.log1p(x ** 2))


def diag_trace_offset(a):          # a: (3, 3)
    return np.trace(a, offset=1) + np.sum(np.diag(a) ** 2) + np.sum(np.diag(np.diag(a)) * W33)


def vecdot_np2(x):                 # x: (4, 3)   NumPy 2 np.vecdot
    return np.sum(np.vecdot(x, V3) ** 2)


def vector_norm_np2(x):            # x: (4, 3)   NumPy 2 np.linalg.vector_norm
    return np.sum(np.linalg.vector_norm(x, axis=-1) * W4)


def matrix_norm_np2(a):            # a: (3, 3)   NumPy 2 np.linalg.matrix_norm
    return np.linalg.matrix_norm(a)


def cumulative_sum_np2(x):         # x: (5,)     NumPy 2 np.cumulative_sum
    return np.sum(np.cumulative_sum(x, include_initial=True) ** 2)


def linalg_trace_diag_np2(a):      # a: (3, 3)   NumPy 2 np.linalg.trace / diagonal / matrix_transpose
    return np.linalg.trace(a @ np.linalg.matrix_transpose(a)) + np.sum(np.linalg.diagonal(a) * W3)


def solve_two(a, b):               # differentiate b (argnum 1): a (3, 3) well conditioned, b (3,)
    return np.sum(np.linalg.solve(a, b) ** 2)


def softmax_manual(x):             # x: (3, 4), a handwritten stable softmax cross-entropy
    z = x - np.max(x, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.sum(logp * W34)


# ===== SciPy ==================================================================================
def rosen_sum(x):                  # x: (5,)
    return scipy.optimize.rosen(x)


def rosen_der_sum(x):              # x: (5,)
    return np.sum(scipy.optimize.rosen_der(x))


def rosen_hess_prod_sum(x):        # x: (5,)
    return np.sum(scipy.optimize.rosen_hess_prod(x, V5) * W5)


def rosen_hess_sum(x):             # x: (4,)
    return np.sum(scipy.optimize.rosen_hess(x) * W44)


def logsumexp_all(x):              # x: (3, 4)
    return scipy.special.logsumexp(x)


def logsumexp_axis_b(x):           # x: (3, 4)
    return np.sum(scipy.special.logsumexp(x, axis=1, b=W34 ** 2))


def softmax_weighted(x):           # x: (3, 4)
    return np.sum(scipy.special.softmax(x, axis=1) * W34)


def log_softmax_weighted(x):       # x: (3, 4)
    return np.sum(scipy.special.log_softmax(x, axis=-1) * W34)


def expit_sum(x):                  # x: (5,)
    return np.sum(scipy.special.expit(x) * W5)


def gammaln_sum(x):                # x: (5,) positive
    return np.sum(scipy.special.gammaln(x))


def xlogy_sum(x):                  # x: (5,) positive
    return np.sum(scipy.special.xlogy(WPOS5, x)) + np.sum(scipy.special.xlogy(x, x))


def entr_sum(x):                   # x: (5,) positive
    return np.sum(scipy.special.entr(x))


def ndtr_sum(x):                   # x: (5,)
    return np.sum(scipy.special.ndtr(x) * W5) + np.sum(scipy.special.log_ndtr(x))


def erf_sum(x):                    # x: (5,)
    return np.sum(scipy.special.erf(x) * W5)


def norm_logpdf(x):                # x: (5,)
    return np.sum(scipy.stats.norm.logpdf(x, loc=0.3, scale=1.2))


def norm_logpdf_loc(mu):           # mu: (5,), the location
    return np.sum(scipy.stats.norm.logpdf(V5, loc=mu, scale=0.8))


def norm_cdf_sum(x):               # x: (5,)
    return np.sum(scipy.stats.norm.cdf(x) * W5)


def mvn_logpdf(x):                 # x: (4, 3), four points
    return np.sum(scipy.stats.multivariate_normal.logpdf(x, mean=MU3, cov=COV3))


def mvn_logpdf_mean(mu):           # mu: (3,), the mean
    return np.sum(scipy.stats.multivariate_normal.logpdf(X_REF, mean=mu, cov=COV3))


def norm_logpdf_scale(x, scale):   # differentiate scale (argnum 1): x (5,), scale (5,) positive
    return np.sum(scipy.stats.norm.logpdf(x, loc=0.1, scale=scale))


def stats_entropy(p):              # p: (5,) positive, normalised inside
    return scipy.stats.entropy(p)


def stats_kl(p):                   # p: (5,) positive; KL(p || Q5)
    return scipy.stats.entropy(p, Q5)


def signal_convolve_same(x):       # x: (6,)
    return np.sum(scipy.signal.convolve(x, KERNEL, mode="same") * W6)


def solve_triangular_sum(b):       # b: (3,)
    return np.sum(scipy.linalg.solve_triangular(L3, b, lower=True) ** 2)


def solve_triangular_matrix(a):    # a: (3, 3); lower triangle used
    m = np.tril(a) + 3.0 * np.eye(3)
    return np.sum(scipy.linalg.solve_triangular(m, V3, lower=True) * W3)


def cho_solve_sum(a):              # a: (3, 3); a @ a.T + 3 I is SPD
    c = scipy.linalg.cho_factor(a @ a.T + 3.0 * np.eye(3))
    return np.sum(scipy.linalg.cho_solve(c, V3) * W3)


def cho_solve_rhs(b):              # b: (3,)
    c, low = scipy.linalg.cho_factor(SPD3)
    return np.sum(scipy.linalg.cho_solve((c, low), b) ** 2)


def expm_sum(a):                   # a: (3, 3)
    return np.sum(scipy.linalg.expm(0.5 * a) * W33)


def scipy_linalg_det_inv(a):       # a: (3, 3)
    return scipy.linalg.det(a) + np.sum(scipy.linalg.inv(a) * W33)


def lu_solve_sum(a):               # a: (3, 3)
    lu, piv = scipy.linalg.lu_factor(a)
    return np.sum(scipy.linalg.lu_solve((lu, piv), V3) * W3)


def cubic_spline(y):               # y: (6,), the values at XP
    spline = scipy.interpolate.CubicSpline(XP, y)
    return np.sum(spline(XQ) ** 2)


# ===== scikit-learn ===========================================================================
def log_loss_of(p):                # p: (6,) probabilities of class 1, inside (0, 1)
    return sklearn.metrics.log_loss(Y_TRUE, p)


def log_loss_multiclass(logits):   # logits: (4, 3)
    e = np.exp(logits)
    return sklearn.metrics.log_loss(Y_MC, e / np.sum(e, axis=1, keepdims=True), labels=[0, 1, 2])


def mse_of(y):                     # y: (6,)
    return sklearn.metrics.mean_squared_error(Y_REG, y)


def r2_of(y):                      # y: (6,)
    return sklearn.metrics.r2_score(Y_REG, y)


def mae_of(y):                     # y: (6,), no y == Y_REG
    return sklearn.metrics.mean_absolute_error(Y_REG, y)


def rbf_kernel_sum(x):             # x: (4, 3)
    return np.sum(sklearn.metrics.pairwise.rbf_kernel(x, gamma=0.5) * W44)


def euclidean_distances_sum(x):    # x: (4, 3) against X_REF, no coincident points
    return np.sum(sklearn.metrics.pairwise.euclidean_distances(x, X_REF) * W44)


def gp_rbf_kernel(x):              # x: (4, 3)
    k = sklearn.gaussian_process.kernels.RBF(length_scale=1.5)
    return np.sum(k(x) * W44)


def preprocessing_scale(x):        # x: (5, 3)
    return np.sum(sklearn.preprocessing.scale(x) * W53)


def cosine_similarity_sum(x):      # x: (4, 3)
    return np.sum(sklearn.metrics.pairwise.cosine_similarity(x, X_REF) * W44)


# ===== statsmodels ============================================================================
def add_constant_ls(beta):         # beta: (4,), intercept first
    design = statsmodels.tools.tools.add_constant(X_DATA)
    r = Y_DATA - design @ beta
    return np.sum(r ** 2)


def eval_measures_rmse(y):         # y: (6,)
    return statsmodels.tools.eval_measures.rmse(y, Y_REG)


def cov2corr_sum(a):               # a: (3, 3); a @ a.T + I is a covariance
    corr = statsmodels.stats.moment_helpers.cov2corr(a @ a.T + np.eye(3))
    return np.sum(corr * W33)


# ===== options users pass (non-default arguments of functions s2s has rules for) ==============
X3_COORDS = np.array([1.0, 1.5, 2.5])                          # coordinates for np.gradient


def gradient_coords3(x):           # x: (3,), np.gradient with a coordinate array (varargs)
    return np.sum(np.gradient(x, X3_COORDS) ** 2)


def gradient_scalar_spacing(x):    # x: (5,), uniform spacing 0.5, edge_order=2
    return np.sum(np.gradient(x, 0.5, edge_order=2) * W5)


def average_returned(x):           # x: (5,)
    avg, wsum = np.average(x ** 2, weights=WPOS5, returned=True)
    return avg * wsum


def norm_ord3(x):                  # x: (5,)
    return np.linalg.norm(x, ord=3)


def norm_ord_inf(x):               # x: (5,), a unique largest |x|
    return np.linalg.norm(x, ord=np.inf) + np.linalg.norm(x, ord=1)


def norm_matrix_ord2(a):           # a: (3, 3), distinct singular values
    return np.linalg.norm(a, ord=2) + np.linalg.norm(a, ord=1)


def norm_keepdims(x):              # x: (4, 3)
    return np.sum(np.linalg.norm(x, axis=0, keepdims=True) * W3)


def diff_prepend(x):               # x: (5,)
    return np.sum(np.diff(x, prepend=0.5, append=x[:1]) ** 2 * W6)


def diff_axis0(x):                 # x: (4, 3)
    return np.sum(np.diff(x, axis=0) * W33)


def interp_left_right(fp):         # fp: (6,), queries outside the knots use left/right
    xq = np.array([-1.0, 0.5, 2.5, 7.0])
    return np.sum(np.interp(xq, XP, fp, left=0.0, right=fp[0]) * W4)


def interp_period(fp):             # fp: (6,), periodic interpolation
    xq = np.array([-0.7, 1.3, 5.5, 8.2])
    return np.sum(np.interp(xq, XP, fp, period=6.0) * W4)


def quantile_methods(x):           # x: (6,), distinct
    return (np.quantile(x, 0.3, method="midpoint") + np.quantile(x, 0.6, method="nearest")
            + np.quantile(x, 0.45, method="hazen") + np.quantile(x, 0.8, method="lower"))


def percentile_keepdims(x):        # x: (5, 3), distinct
    return np.sum(np.percentile(x, [20.0, 70.0], axis=0, keepdims=True) * W3)


def median_axis(x):                # x: (4, 3), distinct; even count: the mean of the middle two
    return np.sum(np.median(x, axis=0) * W3)


def var_axis_tuple(x):             # x: (2, 3, 4)
    return np.sum(np.var(x, axis=(0, 2), ddof=1, keepdims=True) * W3[:, None])


def mean_where(x):                 # x: (6,)
    return np.mean(x ** 2, where=MASK6) + np.sum(x, where=MASK6, initial=1.5)


def std_where(x):                  # x: (6,)
    return np.std(x, where=MASK6)


def clip_array_bounds(x):          # x: (5,), away from the bounds
    return np.sum(np.clip(x, LO5, HI5) ** 2)


def sort_axis_none(x):             # x: (2, 3), distinct
    return np.sum(np.sort(x, axis=None) * W6)


def cumsum_flat(x):                # x: (2, 3)
    return np.sum(np.cumsum(x) * W6) + np.sum(np.cumprod(x, axis=0) * W3)


def einsum_optimize(x):            # x: (3, 4)
    return np.einsum("ij,jk,kl->", x, B43, A33, optimize=True)


def append_axis(x):                # x: (2, 3)
    return np.sum(np.append(x, x[:1] * 2.0, axis=0) * W33)


def max_initial(x):                # x: (5,), distinct
    return np.max(x, initial=-10.0) + np.min(x[1:]) + np.amax(x ** 2)


def solve_batched(a):              # a: (2, 3, 3), well conditioned
    return np.sum(np.linalg.solve(a + 3.0 * np.eye(3), np.ones((2, 3, 1))) * W3[:, None])


def logsumexp_return_sign(x):      # x: (5,), b with mixed signs; the sum stays positive
    val, sign = scipy.special.logsumexp(x, b=np.array([1.0, -0.1, 2.0, 0.5, -0.05]), return_sign=True)
    return val * sign


def logsumexp_keepdims(x):         # x: (3, 4)
    return np.sum(scipy.special.logsumexp(x, axis=0, keepdims=True) * W4)


def softmax_axis_none(x):          # x: (2, 3)
    return np.sum(scipy.special.softmax(x) * W6.reshape(2, 3))


def norm_logpdf_positional(x):     # x: (5,), loc and scale passed positionally
    return np.sum(scipy.stats.norm.logpdf(x, 0.2, 1.5)) + np.sum(scipy.stats.norm.logcdf(x))


def nan_to_num_options(x):         # x: (5,) positive
    return np.sum(np.nan_to_num(np.log(x), nan=0.0, posinf=1e3, neginf=-1e3) * W5)


def take_along_axis_sorted(x):     # x: (3, 4), distinct
    idx = np.argsort(x, axis=1)
    return np.sum(np.take_along_axis(x, idx, axis=1) * W34)


MASK6 = np.array([True, False, True, True, False, True])
LO5 = np.array([-1.0, -0.5, -0.2, -2.0, -0.1])
HI5 = np.array([1.0, 0.5, 0.3, 2.0, 0.1])


# ===== inputs =================================================================================
def _normal(shape, seed, scale=1.0):
    return lambda: (scale * _rng(seed).standard_normal(shape),)


def _positive(shape, seed, lo=0.5, hi=2.0):
    return lambda: (_rng(seed).uniform(lo, hi, shape),)


def _distinct_args(shape, seed, spread=0.3):
    return lambda: (_distinct(shape, seed, spread),)


def _away_from_zero(shape, seed):
    def make():
        r = _rng(seed)
        return (r.choice([-1.0, 1.0], size=shape) * r.uniform(0.3, 1.5, shape),)
    return make


def _clip_inputs():
    r = _rng(7)
    return (np.array([-0.9, -0.3, 0.1, 0.35, 0.8, -0.65]) + 0.02 * r.standard_normal(6),)


def _wellcond_args(seed, n=3):
    return lambda: (_wellcond(n, seed),)


def _probabilities():
    return (_rng(31).uniform(0.15, 0.85, 6),)


def _mae_inputs():
    return (Y_REG + _away_from_zero(6, 32)()[0] * 0.5,)


def _interp_query():
    return (XQ + 0.05 * _rng(33).standard_normal(5),)


CASES = [
    # NumPy
    ("cov_trace", cov_trace, _normal((3, 5), 1)),
    ("cov_weighted_sum", cov_weighted_sum, _normal((5, 3), 2)),
    ("corrcoef_sum", corrcoef_sum, _normal((3, 5), 3)),
    ("ptp_sq", ptp_sq, _distinct_args((4, 3), 4)),
    ("trapezoid_sin", trapezoid_sin, _normal((6,), 5)),
    ("trapezoid_dx", trapezoid_dx, _normal((3, 6), 6)),
    ("polyval_coeffs", polyval_coeffs, _normal((4,), 7)),
    ("polyval_points", polyval_points, _normal((5,), 8)),
    ("vander_product", vander_product, _normal((5,), 9)),
    ("meshgrid_surface", meshgrid_surface, _normal((4,), 10)),
    ("block_matrix", block_matrix, _normal((2, 2), 11)),
    ("matrix_power_trace", matrix_power_trace, _normal((3, 3), 12)),
    ("multi_dot_sum", multi_dot_sum, _normal((3, 4), 13)),
    ("append_weighted", append_weighted, _normal((3,), 14)),
    ("gradient_energy", gradient_energy, _normal((6,), 15)),
    ("gradient_spacing", gradient_spacing, _normal((6,), 16)),
    ("real_if_close_sq", real_if_close_sq, _normal((5,), 17)),
    ("average_weighted", average_weighted, _normal((5,), 18)),
    ("average_axis", average_axis, _normal((5, 3), 19)),
    ("convolve_full", convolve_full, _normal((5,), 20)),
    ("convolve_valid", convolve_valid, _normal((6,), 21)),
    ("lstsq_rhs", lstsq_rhs, _normal((5,), 22)),
    ("lstsq_matrix", lstsq_matrix, _normal((5, 3), 23)),
    ("interp_values", interp_values, _normal((6,), 24)),
    ("interp_query", interp_query, _interp_query),
    ("kron_sq", kron_sq, _normal((2, 2), 25)),
    ("diff_second", diff_second, _normal((6,), 26)),
    ("cumsum_weighted", cumsum_weighted, _normal((3, 4), 27)),
    ("cumprod_sum", cumprod_sum, _positive((5,), 28)),
    ("einsum_trace3", einsum_trace3, _normal((3, 3), 29)),
    ("einsum_batched", einsum_batched, _normal((2, 3, 4), 30)),
    ("norm_vector", norm_vector, _normal((5,), 34)),
    ("norm_rows", norm_rows, _normal((4, 3), 35)),
    ("norm_fro", norm_fro, _normal((3, 3), 36)),
    ("solve_sum", solve_sum, _wellcond_args(37)),
    ("det_of", det_of, _wellcond_args(38)),
    ("slogdet_logabs", slogdet_logabs, _wellcond_args(39)),
    ("inv_trace", inv_trace, _wellcond_args(40)),
    ("outer_weighted", outer_weighted, _normal((3,), 41)),
    ("tril_triu", tril_triu, _normal((3, 3), 42)),
    ("where_branches", where_branches, _away_from_zero((5,), 43)),
    ("clip_sq", clip_sq, _clip_inputs),
    ("sort_weighted", sort_weighted, _distinct_args((5,), 44)),
    ("percentile_30", percentile_30, _distinct_args((6,), 45)),
    ("quantile_axis", quantile_axis, _distinct_args((5, 3), 46)),
    ("median_odd", median_odd, _distinct_args((5,), 47)),
    ("var_ddof", var_ddof, _normal((6,), 48)),
    ("std_axis_ddof", std_axis_ddof, _normal((5, 3), 49)),
    ("logaddexp_sum", logaddexp_sum, _normal((5,), 50)),
    ("hypot_sum", hypot_sum, _away_from_zero((5,), 51)),
    ("sinc_sum", sinc_sum, _away_from_zero((5,), 52)),
    ("i0_sum", i0_sum, _normal((5,), 53)),
    ("nan_to_num_log", nan_to_num_log, _positive((5,), 54)),
    ("eigh_weighted", eigh_weighted, _normal((3, 3), 55)),
    ("eigvalsh_max", eigvalsh_max, _normal((3, 3), 56)),
    ("svd_nuclear", svd_nuclear, _normal((3, 3), 57)),
    ("svd_values", svd_values, _normal((4, 3), 58)),
    ("cholesky_logdet", cholesky_logdet, _normal((3, 3), 59)),
    ("qr_r_diag", qr_r_diag, _normal((4, 3), 60)),
    ("pinv_sum", pinv_sum, _normal((4, 3), 61)),
    ("tensordot_sum", tensordot_sum, _normal((3, 4), 62)),
    ("inner_cross", inner_cross, _normal((3,), 63)),
    ("stack_concat", stack_concat, _normal((3,), 64)),
    ("roll_flip_tile", roll_flip_tile, _normal((4,), 65)),
    ("prod_axis", prod_axis, _away_from_zero((3, 4), 66)),
    ("rfft_power", rfft_power, _normal((6,), 67)),
    ("polyfit_coeffs", polyfit_coeffs, _normal((6,), 68)),
    ("arctan2_expm1", arctan2_expm1, _normal((5,), 69)),
    ("diag_trace_offset", diag_trace_offset, _normal((3, 3), 70)),
    ("vecdot_np2", vecdot_np2, _normal((4, 3), 71)),
    ("vector_norm_np2", vector_norm_np2, _normal((4, 3), 72)),
    ("matrix_norm_np2", matrix_norm_np2, _normal((3, 3), 73)),
    ("cumulative_sum_np2", cumulative_sum_np2, _normal((5,), 74)),
    ("linalg_trace_diag_np2", linalg_trace_diag_np2, _normal((3, 3), 75)),
    ("solve_two", solve_two, lambda: (_wellcond(3, 77), _rng(78).standard_normal(3))),
    ("softmax_manual", softmax_manual, _normal((3, 4), 76)),
    # SciPy
    ("rosen_sum", rosen_sum, _normal((5,), 101, 0.5)),
    ("rosen_der_sum", rosen_der_sum, _normal((5,), 102, 0.5)),
    ("rosen_hess_prod_sum", rosen_hess_prod_sum, _normal((5,), 103, 0.5)),
    ("rosen_hess_sum", rosen_hess_sum, _normal((4,), 104, 0.5)),
    ("logsumexp_all", logsumexp_all, _normal((3, 4), 105)),
    ("logsumexp_axis_b", logsumexp_axis_b, _normal((3, 4), 106)),
    ("softmax_weighted", softmax_weighted, _normal((3, 4), 107)),
    ("log_softmax_weighted", log_softmax_weighted, _normal((3, 4), 108)),
    ("expit_sum", expit_sum, _normal((5,), 109)),
    ("gammaln_sum", gammaln_sum, _positive((5,), 110, 0.5, 4.0)),
    ("xlogy_sum", xlogy_sum, _positive((5,), 111)),
    ("entr_sum", entr_sum, _positive((5,), 112, 0.1, 2.0)),
    ("ndtr_sum", ndtr_sum, _normal((5,), 113)),
    ("erf_sum", erf_sum, _normal((5,), 114)),
    ("norm_logpdf", norm_logpdf, _normal((5,), 115)),
    ("norm_logpdf_loc", norm_logpdf_loc, _normal((5,), 116)),
    ("norm_cdf_sum", norm_cdf_sum, _normal((5,), 117)),
    ("mvn_logpdf", mvn_logpdf, _normal((4, 3), 118)),
    ("mvn_logpdf_mean", mvn_logpdf_mean, _normal((3,), 119)),
    ("norm_logpdf_scale", norm_logpdf_scale,
     lambda: (_rng(131).standard_normal(5), _rng(132).uniform(0.5, 2.0, 5))),
    ("stats_entropy", stats_entropy, _positive((5,), 120, 0.2, 1.5)),
    ("stats_kl", stats_kl, _positive((5,), 121, 0.2, 1.5)),
    ("signal_convolve_same", signal_convolve_same, _normal((6,), 122)),
    ("solve_triangular_sum", solve_triangular_sum, _normal((3,), 123)),
    ("solve_triangular_matrix", solve_triangular_matrix, _normal((3, 3), 124, 0.5)),
    ("cho_solve_sum", cho_solve_sum, _normal((3, 3), 125)),
    ("cho_solve_rhs", cho_solve_rhs, _normal((3,), 126)),
    ("expm_sum", expm_sum, _normal((3, 3), 127)),
    ("scipy_linalg_det_inv", scipy_linalg_det_inv, _wellcond_args(128)),
    ("lu_solve_sum", lu_solve_sum, _wellcond_args(129)),
    ("cubic_spline", cubic_spline, _normal((6,), 130)),
    # scikit-learn
    ("log_loss_of", log_loss_of, _probabilities),
    ("log_loss_multiclass", log_loss_multiclass, _normal((4, 3), 201)),
    ("mse_of", mse_of, _normal((6,), 202)),
    ("r2_of", r2_of, _normal((6,), 203)),
    ("mae_of", mae_of, _mae_inputs),
    ("rbf_kernel_sum", rbf_kernel_sum, _normal((4, 3), 204)),
    ("euclidean_distances_sum", euclidean_distances_sum, _normal((4, 3), 205)),
    ("gp_rbf_kernel", gp_rbf_kernel, _normal((4, 3), 206)),
    ("preprocessing_scale", preprocessing_scale, _normal((5, 3), 207)),
    ("cosine_similarity_sum", cosine_similarity_sum, _normal((4, 3), 208)),
    # statsmodels
    ("add_constant_ls", add_constant_ls, _normal((4,), 301)),
    ("eval_measures_rmse", eval_measures_rmse, _normal((6,), 302)),
    ("cov2corr_sum", cov2corr_sum, _normal((3, 3), 303)),
]

CASES += [
    ("gradient_coords3", gradient_coords3, _normal((3,), 401)),
    ("gradient_scalar_spacing", gradient_scalar_spacing, _normal((5,), 402)),
    ("average_returned", average_returned, _normal((5,), 403)),
    ("norm_ord3", norm_ord3, _normal((5,), 404)),
    ("norm_ord_inf", norm_ord_inf, _distinct_args((5,), 405)),
    ("norm_matrix_ord2", norm_matrix_ord2, _normal((3, 3), 406)),
    ("norm_keepdims", norm_keepdims, _normal((4, 3), 407)),
    ("diff_prepend", diff_prepend, _normal((5,), 408)),
    ("diff_axis0", diff_axis0, _normal((4, 3), 409)),
    ("interp_left_right", interp_left_right, _normal((6,), 410)),
    ("interp_period", interp_period, _normal((6,), 411)),
    ("quantile_methods", quantile_methods, _distinct_args((6,), 412)),
    ("percentile_keepdims", percentile_keepdims, _distinct_args((5, 3), 413)),
    ("median_axis", median_axis, _distinct_args((4, 3), 414)),
    ("var_axis_tuple", var_axis_tuple, _normal((2, 3, 4), 415)),
    ("mean_where", mean_where, _normal((6,), 416)),
    ("std_where", std_where, _normal((6,), 417)),
    ("clip_array_bounds", clip_array_bounds,
     lambda: (np.array([0.5, -0.8, 0.0, 1.0, 0.5]) + 0.01 * _rng(418).standard_normal(5),)),
    ("sort_axis_none", sort_axis_none, _distinct_args((2, 3), 419)),
    ("cumsum_flat", cumsum_flat, _normal((2, 3), 420)),
    ("einsum_optimize", einsum_optimize, _normal((3, 4), 421)),
    ("append_axis", append_axis, _normal((2, 3), 422)),
    ("max_initial", max_initial, _distinct_args((5,), 423)),
    ("solve_batched", solve_batched, _normal((2, 3, 3), 424, 0.5)),
    ("logsumexp_return_sign", logsumexp_return_sign, _normal((5,), 425)),
    ("logsumexp_keepdims", logsumexp_keepdims, _normal((3, 4), 426)),
    ("softmax_axis_none", softmax_axis_none, _normal((2, 3), 427)),
    ("norm_logpdf_positional", norm_logpdf_positional, _normal((5,), 428)),
    ("nan_to_num_options", nan_to_num_options, _positive((5,), 429)),
    ("take_along_axis_sorted", take_along_axis_sorted, _distinct_args((3, 4), 430)),
]



# ===== edge points: smooth functions at inputs where the naive derivative is not finite ===========
# Kept out of CASES: where_sqrt_negative gives nan where JAX does too (docs/conventions.md, rule 4:
# a zero cotangent times the nan slope of the untaken branch's np.sqrt at a negative number), and
# det_singular raises LinAlgError (the derivative of det, the adjugate, exists at a singular matrix).
def where_sqrt_negative(x):        # x: (5,), some entries negative: the untaken branch is nan there
    return np.sum(np.where(x > 0, np.sqrt(x), 0.0))


def det_singular(a):               # a: (3, 3) of rank 2
    return np.linalg.det(a)


EDGE_CASES = [
    ("where_sqrt_negative", where_sqrt_negative, lambda: (np.array([0.5, -1.0, 2.0, -0.3, 1.1]),)),
    ("det_singular", det_singular,
     lambda: (np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]]),)),
]

# Cases that differentiate an argument other than the first (every other case takes its
# differentiated input first and reads the rest from module-level constants).
ARGNUMS: dict[str, int] = {"solve_two": 1, "norm_logpdf_scale": 1}


def argnum(name):
    return ARGNUMS.get(name, 0)
