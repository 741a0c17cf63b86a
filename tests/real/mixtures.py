"""Mixture models: autograd's examples/gmm.py (zip(*unpack(params)), scipy's
multivariate_normal.logpdf), a 1-D mixture from a list of component tuples, and a
Student-t mixture from a nested dict with a dict comprehension and sorted(.items())."""
import numpy as np
from scipy.special import logsumexp
from scipy.stats import multivariate_normal as mvn
from scipy.stats import norm, t


def init_gmm_params(num_components, D, scale, rs=None):
    rs = rs if rs is not None else np.random.default_rng(0)
    return {'log proportions': rs.standard_normal(num_components) * scale,
            'means':           rs.standard_normal((num_components, D)) * scale,
            'lower triangles': np.zeros((num_components, D, D)) + np.eye(D)
                               + 0.1 * np.tril(rs.standard_normal((num_components, D, D)), -1)}


def log_normalize(x):
    return x - logsumexp(x)


def unpack_gmm_params(params):
    normalized_log_proportions = log_normalize(params['log proportions'])
    return normalized_log_proportions, params['means'], params['lower triangles']


def gmm_log_likelihood(params, data):
    cluster_lls = []
    for log_proportion, mean, cov_sqrt in zip(*unpack_gmm_params(params)):
        cov = np.dot(cov_sqrt.T, cov_sqrt)
        cluster_lls.append(log_proportion + mvn.logpdf(data, mean, cov))
    return np.sum(logsumexp(np.vstack(cluster_lls), axis=0))


def make_gmm_args(seed=0):
    params = init_gmm_params(num_components=2, D=2, scale=1.0, rs=np.random.default_rng(8))
    data = np.random.default_rng(1000 + seed).standard_normal((5, 2))
    return params, data


# --- 1-D mixture: components as a list of (logit, mean, log_sigma) tuples --------------------

def mog1d_nll(components, x):
    logits, mus, log_sigmas = zip(*components)
    logits = np.array(logits)
    log_w = logits - logsumexp(logits)
    lls = [lw + norm.logpdf(x, mu, np.exp(ls)) for lw, mu, ls in zip(log_w, mus, log_sigmas)]
    return -np.sum(logsumexp(np.stack(lls), axis=0))


def make_mog1d_args(seed=0):
    components = [(0.3, -1.0, -0.2), (-0.1, 0.5, 0.1), (0.2, 2.0, -0.4)]
    x = np.random.default_rng(1100 + seed).normal(0.5, 1.5, size=6)
    return components, x


# --- Student-t mixture: nested dict params, dict comprehension, sorted items -----------------

def t_mixture_nll(params, x, df=4.0):
    comps = sorted(params.items())             # fixed order: by component name
    log_w = {name: p["logit"] for name, p in comps}
    log_norm = logsumexp(np.array(list(log_w.values())))
    terms = [log_w[name] - log_norm
             + t.logpdf(x, df, loc=p["loc"], scale=np.exp(p["log_scale"]))
             for name, p in comps]
    return -np.mean(logsumexp(np.stack(terms), axis=0))


def make_t_mixture_args(seed=0):
    params = {"narrow": {"logit": 0.2, "loc": -0.5, "log_scale": -0.3},
              "wide": {"logit": -0.1, "loc": 1.0, "log_scale": 0.4}}
    x = np.random.default_rng(1200 + seed).standard_t(4.0, size=7)
    return params, x


CASES = [
    dict(name="gmm_log_likelihood", fn=gmm_log_likelihood, args=make_gmm_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0),
         constructs="zip(*f(params)) unpacking a returned tuple, scipy.stats.multivariate_normal"
                    ".logpdf, scipy.special.logsumexp, list .append + np.vstack, x.T"),
    dict(name="mog1d_nll", fn=mog1d_nll, args=make_mog1d_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0),
         constructs="zip(*components) over a list of tuples of floats, np.array of a tuple, list "
                    "comprehension with tuple target, scipy.stats.norm.logpdf, np.stack of a list"),
    dict(name="t_mixture_nll", fn=t_mixture_nll, args=make_t_mixture_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0),
         constructs="nested dict params, sorted(dict.items()), dict comprehension, list(d.values()), "
                    "scipy.stats.t.logpdf with loc/scale keywords, list comprehension"),
]
