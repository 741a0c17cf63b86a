"""Elementwise ops: ufuncs (arithmetic, exp/log, trig, hyperbolic, comparisons), where, clip, abs."""
