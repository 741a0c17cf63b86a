"""vmap's rules for the shape family's queries (OpRule.batch_rule, read by transforms/batching_ops.py):
np.shape, np.ndim, np.size and len of a batched array answer for one example."""
from __future__ import annotations

import builtins

import gast
import numpy as np

from ...frontend.ast_build import const
from ...rules.registry import declare
from ...runtime import batching as rtb
from ...transforms.common import rule_call


def _ndim(value):
    return gast.BinOp(rule_call(np.ndim, [value.args[0]]), gast.Sub(), const(1))


declare(np.shape, batch_rule=lambda value: rule_call(rtb.bshape, [value.args[0]]))
declare(np.ndim, batch_rule=_ndim)
declare(np.size, batch_rule=lambda value: rule_call(rtb.bsize, [value.args[0]]))
declare(builtins.len, batch_rule=lambda value: rule_call(rtb.blen, [value.args[0]]))
