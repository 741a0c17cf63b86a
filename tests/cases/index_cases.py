"""An index that carries a differentiated value (s2s reads these sources)."""
import numpy as np


class Doubler:
    """An object whose __getitem__ computes from its key (as np.r_ does)."""
    def __getitem__(self, key):
        return key * 2.0


DOUBLE = Doubler()


def through_getitem(x):
    # was a silent zero: the key was read as a constant index
    return DOUBLE[x] * 3.0


def integer_index_of_a_value(x):
    i = int(x)
    return np.arange(5.0)[i] * x
