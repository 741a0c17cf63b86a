"""What the layers above hand down to normalization, so the frontend imports nothing above it.

The rule table (rules/table.py) installs its `lookup`, `composite_of` and `method_op` here when it
is loaded: normalization asks them whether a call has a rule (it stays a call) or a definition by
other ops (it is inlined), and otherwise inlines the callee's source; and which op an ndarray
method or attribute means (`x.sum(1)` is `np.sum(x, 1)`, `x.T` is `np.transpose(x)`).

TRANSFORM_FACTORIES: the public s2s functions (grad, vmap, jacfwd, ...) whose calls inside code
s2s transforms build a transform while normalizing: `s2s.vmap(f, in_axes=(None, 0))(x, y)`.
s2s's api registers them when it is imported.

SITE_LOCATOR (install_site_locator): codegen's map from a line of a generated file to the user's
line it came from, for errors raised in generated code that normalization inlines.

Transformation objects reach normalization by duck typing, not by class: an object with
`_s2s_inline_source(nargs)` is called through its generated source; one with
`_s2s_tree_source(treedefs, leaf_nums)` (grad and value_and_grad) also takes pytree arguments.
"""
from __future__ import annotations

from typing import Callable

TRANSFORM_FACTORIES: set[Callable] = set()


def register_transform_factories(*factories: Callable) -> None:
    TRANSFORM_FACTORIES.update(factories)


_RULEBOOK: list[tuple[Callable, Callable, Callable, Callable]] = []


def install_rulebook(lookup_fn: Callable, composite_of_fn: Callable, method_op_fn: Callable,
                     attribute_op_fn: Callable) -> None:
    _RULEBOOK[:] = [(lookup_fn, composite_of_fn, method_op_fn, attribute_op_fn)]


def _rulebook() -> tuple[Callable, Callable, Callable, Callable]:
    if not _RULEBOOK:       # never guess: without the table every op would look rule-less
        raise RuntimeError("s2s's rule table is not loaded: import s2s (or s2s.rules.table) first")
    return _RULEBOOK[0]


def lookup(obj):
    """The OpRule of `obj`, or None (rules/table.py's lookup)."""
    return _rulebook()[0](obj)


def composite_of(obj):
    """The Python definition of an op defined by other ops, or None (rules/table.py's composite_of)."""
    return _rulebook()[1](obj)


def method_op(method: str):
    """The op an ndarray method of this name means (`x.sum` -> np.sum; OpRule.methods), or None."""
    return _rulebook()[2](method)


def attribute_op(attribute: str):
    """The op an ndarray attribute of this name means (`x.T` -> np.transpose; OpRule.attributes), or None."""
    return _rulebook()[3](attribute)


_SITE_LOCATOR: list[Callable] = []


def install_site_locator(locate: Callable) -> None:
    """codegen/user_lines.py installs `locate(generated file, line) -> (file, line, source line) | None`:
    the user's line a line of a file s2s generated was made from (errors in inlined generated code)."""
    _SITE_LOCATOR[:] = [locate]


def generated_site(filename: str, lineno: int | None):
    """The user's (file, line, source line) behind line `lineno` of generated `filename`, or None."""
    if not _SITE_LOCATOR or lineno is None:
        return None
    try:
        return _SITE_LOCATOR[0](filename, lineno)
    except Exception:       # noqa: BLE001 - locating is a courtesy; the error keeps the generated line
        return None
