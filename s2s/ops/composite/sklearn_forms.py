"""scikit-learn's metrics and kernels as composites (loaded once the user's code imported
sklearn.metrics): their own source goes through parameter validation and scikit-learn's array-API
layer (`get_namespace_and_device`, `check_array`, `move_to`), which s2s does not read; here their
mathematics, as scikit-learn 1.x defines it, for NumPy arrays.  Options a definition does not
cover are refused when the code runs (check_unset), never ignored."""
from __future__ import annotations

import numpy as np
import sklearn.metrics
import sklearn.metrics.pairwise
import sklearn.preprocessing

from ...runtime import check_unset
from ...rules.registry import register_composite

_EPS = 2.220446049250313e-16        # float64's machine epsilon (scikit-learn clips probabilities to it)


def _regression_average(errors, multioutput):
    if isinstance(multioutput, str):
        if multioutput == "raw_values":
            return errors
        return np.mean(errors)
    return np.average(errors, weights=multioutput)


def mean_squared_error(y_true, y_pred, *, sample_weight=None, multioutput="uniform_average"):
    errors = np.average((y_true - y_pred) ** 2, axis=0, weights=sample_weight)
    return _regression_average(errors, multioutput)


def mean_absolute_error(y_true, y_pred, *, sample_weight=None, multioutput="uniform_average"):
    errors = np.average(np.abs(y_true - y_pred), axis=0, weights=sample_weight)
    return _regression_average(errors, multioutput)


def r2_score(y_true, y_pred, *, sample_weight=None, multioutput="uniform_average", force_finite=True):
    check_unset(sample_weight, "r2_score's sample_weight=")
    numerator = np.sum((y_true - y_pred) ** 2, axis=0)
    denominator = np.sum((y_true - np.mean(y_true, axis=0)) ** 2, axis=0)
    safe = np.where(denominator != 0.0, denominator, 1.0)
    scores = np.where(denominator != 0.0, 1.0 - numerator / safe, np.where(numerator == 0.0, 1.0, 0.0))
    if isinstance(multioutput, str) and multioutput == "variance_weighted":
        return np.average(scores, weights=denominator)
    return _regression_average(scores, multioutput)


def log_loss(y_true, y_proba=None, *, normalize=True, sample_weight=None, labels=None, y_pred=None, eps=None):
    # (y_pred: the argument's name before scikit-learn 1.9; a branch on the default None is decided
    # when s2s reads the code, so compiled code sees one array)
    if y_pred is not None:
        return _log_loss(y_true, y_pred, normalize, sample_weight, labels)
    return _log_loss(y_true, y_proba, normalize, sample_weight, labels)


def _log_loss(y_true, probabilities, normalize, sample_weight, labels):
    classes = np.unique(y_true if labels is None else labels)
    one_hot = (np.reshape(y_true, (-1, 1)) == np.reshape(classes, (1, -1))) * 1.0
    # (n,) or (n, 1): the positive class's probability, the negative one's put first, as scikit-learn
    # does (no branch on the rank: compiled code types both sides of one)
    columns = np.reshape(probabilities, (np.shape(probabilities)[0], -1))
    if np.shape(columns)[1] == 1:
        columns = np.concatenate((1.0 - columns, columns), axis=1)
    clipped = np.clip(columns, _EPS, 1.0 - _EPS)
    loss = -np.sum(one_hot * np.log(clipped), axis=1)
    if normalize:
        return np.average(loss, weights=sample_weight)
    if sample_weight is None:
        return np.sum(loss)
    return np.sum(loss * sample_weight)


def euclidean_distances(X, Y=None, *, Y_norm_squared=None, squared=False, X_norm_squared=None):
    other = X if Y is None else Y
    d2 = np.sum((X[:, None, :] - other[None, :, :]) ** 2, axis=-1)
    if squared:
        return d2
    return np.sqrt(d2)


def rbf_kernel(X, Y=None, gamma=None):
    scale = 1.0 / np.shape(X)[1] if gamma is None else gamma
    return np.exp(-scale * euclidean_distances(X, Y, squared=True))


def cosine_similarity(X, Y=None, dense_output=True):
    other = X if Y is None else Y
    xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    yn = other / np.linalg.norm(other, axis=1, keepdims=True)
    return xn @ yn.T


def scale(X, *, axis=0, with_mean=True, with_std=True, copy=True):
    out = X * 1.0
    if with_mean:
        out = out - np.mean(X, axis=axis, keepdims=True)
    if with_std:
        sd = np.std(X, axis=axis, keepdims=True)
        out = out / np.where(sd == 0.0, 1.0, sd)
    return out


for _fn, _definition in ((sklearn.metrics.mean_squared_error, mean_squared_error),
                         (sklearn.metrics.mean_absolute_error, mean_absolute_error),
                         (sklearn.metrics.r2_score, r2_score), (sklearn.metrics.log_loss, log_loss),
                         (sklearn.metrics.pairwise.euclidean_distances, euclidean_distances),
                         (sklearn.metrics.pairwise.rbf_kernel, rbf_kernel),
                         (sklearn.metrics.pairwise.cosine_similarity, cosine_similarity),
                         (sklearn.preprocessing.scale, scale)):
    register_composite(_fn, _definition)
