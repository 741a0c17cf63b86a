"""A module-level lambda called from a function (s2s reads these sources)."""
import numpy as np

scale = lambda x, y: x * y          # noqa: E731 - the form under test
C = np.array([1.0, 2.0, 3.0])


def loss(x):
    # the generated file had `y_<lambda> = c` (a SyntaxError) for the inlined lambda's locals
    return np.sum(np.sin(scale(x, C)))

# Two lambdas on one line (the source of each is found by its code's column positions); they
# shared a disk-cache key (file, line and name) and the second got the first's gradient.
double, cube = (lambda x: x * 2.0), (lambda x: x ** 3)     # noqa: E731
TRANSFORMS = {"sin": lambda: (lambda x: np.sin(x) * x)}    # a lambda made by a lambda
