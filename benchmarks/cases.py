"""Benchmark functions, written as a user would (plain NumPy)."""
import numpy as np


def logistic_loss(w, x, y):
    """Per-example logistic loss: log(1 + exp(-y * <x, w>))."""
    return np.log(1.0 + np.exp(-y * (x @ w)))


def per_example_grads_numpy(w, X, y):
    """Hand-written per-example gradients of logistic_loss (the issue's reference expression)."""
    return (-y / (1 + np.exp(y * (X @ w))))[:, None] * X
