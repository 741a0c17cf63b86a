"""A module-level lambda called from a function (s2s reads these sources)."""
import numpy as np

scale = lambda x, y: x * y          # noqa: E731 - the form under test
C = np.array([1.0, 2.0, 3.0])


def loss(x):
    # the generated file had `y_<lambda> = c` (a SyntaxError) for the inlined lambda's locals
    return np.sum(np.sin(scale(x, C)))
