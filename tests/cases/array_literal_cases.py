"""np.array of nested list literals of differentiated values (s2s reads these sources)."""
import numpy as np

WEIGHTS = np.array([[1.0, 2.0], [3.0, 4.0]])


def rotation_like(p):
    # the shape that once lost derivatives: a 2x2 matrix built from the entries of p
    s = np.array([[p[1], -p[0]], [p[0] * p[1], 2.0 * p[1]]])
    return np.sum(s * s * WEIGHTS)


def scalar_matrix(x):
    # s2s.grad(lambda x: np.sum(np.array([[x, 2.0 * x], [x * x, 1.0]])))(3.0) was 0.0 (right: 9.0)
    return np.sum(np.array([[x, 2.0 * x], [x * x, 1.0]]))


def nested_three_deep(p):
    t = np.array([[[p[0], p[1]], [p[1] * p[2], 1.0]], [[np.sin(p[2]), 0.5], [p[0] * p[0], p[2]]]])
    return np.sum(np.tanh(t) * np.arange(8.0).reshape(2, 2, 2))
