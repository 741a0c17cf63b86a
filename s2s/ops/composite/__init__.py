"""Ops defined by other ops, inlined in place of the call: quantile, median, pinv, linspace, ..."""
