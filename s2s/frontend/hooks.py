"""What the layers above hand down to normalization, so the frontend imports nothing above it.

TRANSFORM_FACTORIES: the public s2s functions (grad, vmap, jacfwd, ...) whose calls inside code
s2s transforms build a transform while normalizing: `s2s.vmap(f, in_axes=(None, 0))(x, y)`.
s2s's api registers them when it is imported.

Transformation objects reach normalization by duck typing, not by class: an object with
`_s2s_inline_source(nargs)` is called through its generated source; one with
`_s2s_tree_source(treedefs, leaf_nums)` (grad and value_and_grad) also takes pytree arguments.
"""
from __future__ import annotations

from typing import Callable

TRANSFORM_FACTORIES: set[Callable] = set()


def register_transform_factories(*factories: Callable) -> None:
    TRANSFORM_FACTORIES.update(factories)
