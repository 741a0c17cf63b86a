"""Stand-ins for Numba: np.trace and np.diagonal with offset and any axis pair (see
s2s/backends/numba_numpy/__init__.py)."""
from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload as nb_overload

from ...backends.numba_lower.common import is_array, is_none
from ...backends.numba_numpy.common import standin
from ..reductions.numba import SIGNED_INTS
from ..reductions.numba_norm import matrix_batch_result, matrix_batch_size, matrix_perm


# =============================================================================
# np.trace / np.diagonal
# =============================================================================

def _diag_prep(a, offset, axis1, axis2):
    """(y3, i0, j0, L, yshape): a's (axis1, axis2) planes as a C-contiguous (batch, n1, n2)
    array, the first element of the offset diagonal and its length; Numba only."""
    raise NotImplementedError


@nb_overload(_diag_prep)
def _diag_prep_impl(a, offset, axis1, axis2):
    nd = a.ndim

    def impl(a, offset, axis1, axis2):
        if axis1 < -nd or axis1 >= nd or axis2 < -nd or axis2 >= nd:
            raise ValueError("axis is out of bounds for the array's dimension")
        ax1 = axis1 % nd
        ax2 = axis2 % nd
        if ax1 == ax2:
            raise ValueError("axis1 and axis2 cannot be the same")
        perm, inv = matrix_perm(a.shape, ax1, ax2)
        y = np.ascontiguousarray(a.transpose(perm))
        n1 = a.shape[ax1]
        n2 = a.shape[ax2]
        nb = matrix_batch_size(y.shape)
        if offset >= 0:
            i0 = 0
            j0 = offset
            L = max(0, min(n1, n2 - offset))
        else:
            i0 = -offset
            j0 = 0
            L = max(0, min(n1 + offset, n2))
        return y.reshape((nb, n1, n2)), i0, j0, L, y.shape
    return impl


def _sum_dtype(t):
    if t in (types.float64, types.float32, types.complex128):
        return np.dtype(str(t)).type
    if isinstance(t, types.Boolean) or t in SIGNED_INTS:
        return np.int64
    return None


@standin(np.trace)
def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if not (is_none(dtype) and is_none(out)) or not is_array(a) or a.ndim < 2:
        return None
    if not all(isinstance(t, (int, types.Integer, types.Omitted)) for t in (offset, axis1, axis2)):
        return None
    acc = _sum_dtype(a.dtype)
    if acc is None:
        return None

    def impl(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        y3, i0, j0, L, yshape = _diag_prep(a, offset, axis1, axis2)
        nb = y3.shape[0]
        res = np.zeros(nb, dtype=acc)
        for b in range(nb):
            s = res[b]
            for k in range(L):
                s += y3[b, i0 + k, j0 + k]
            res[b] = s
        return matrix_batch_result(res, yshape)
    return impl


@standin(np.diagonal)
def _diagonal(a, offset=0, axis1=0, axis2=1):
    if not is_array(a) or a.ndim < 2:
        return None
    if not all(isinstance(t, (int, types.Integer, types.Omitted)) for t in (offset, axis1, axis2)):
        return None
    nb_axes = a.ndim - 2

    def impl(a, offset=0, axis1=0, axis2=1):
        y3, i0, j0, L, yshape = _diag_prep(a, offset, axis1, axis2)
        nb = y3.shape[0]
        res = np.empty((nb, L), dtype=a.dtype)
        for b in range(nb):
            for k in range(L):
                res[b, k] = y3[b, i0 + k, j0 + k]
        return res.reshape(yshape[:nb_axes] + (L,))
    return impl
