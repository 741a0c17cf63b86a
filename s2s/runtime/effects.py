"""Run-time helpers of the side effects generated code keeps (frontend/effects.py describes them).

A statement that does not touch the maths (a `raise`, a `logging`/`warnings`/matplotlib call, a
`print` of an f-string, a `try` or `with` made of such statements) runs as the user wrote it: its
source is compiled into a small Python function (a *block*, in the user's file and lines, so a
traceback shows them) that generated code calls with the values of the locals it reads:

- `effect(block, where, unsafe, names, checks, *values)` runs a block for its effect;
- `raise_block(block, where, *values)` runs a block that raises (a `raise` statement);
- `format_value(block, *values)` is the value of an f-string (a string);
- `with_start(...)` / `region_end(...)` and `try_start(...)` / `region_end(...)` mark the
  statements a `with` or a `try` holds when their body computes values: codegen/regions.py turns
  each pair into a real `with region_context(...)` / `try: ... except BaseException:` block
  around the forward sweep's statements (the markers themselves never run).

What a block may be handed: its callee may change an argument in place (`np.copyto(y, x)`,
`rng.shuffle(y)`, `y.sort()`), which would change the maths behind the derivative's back. So
unless every call in the block is known not to (a call into logging, warnings, matplotlib, time,
sys or builtins, an op with a rule, a method that does not write such as `.item()`, or a method
of an object of those modules, checked when it runs: `ax.imshow(y)` with `ax` a matplotlib Axes),
no array the function may read afterwards (`checks` bit 1) may be passed to it: that is refused
here, at the user's line, before the block runs.
"""
from __future__ import annotations

import linecache

import numpy as np

from ..errors import TransformError


# Modules whose functions and objects' methods run as written without changing arrays they are given.
SAFE_MODULES = frozenset({"logging", "warnings", "_warnings", "matplotlib", "mpl_toolkits", "time", "sys",
                          "builtins"})
# builtins that change the objects they are given (or run code)
UNSAFE_BUILTINS = frozenset({"setattr", "delattr", "exec", "eval", "__import__", "compile", "next", "vars"})

READ_LATER = 1      # checks bit: the value may be an array the maths reads afterwards
RECEIVER = 2        # checks bit: the value's methods are called (safe iff its type's module is safe)


class EffectError(TransformError):
    """A side effect s2s runs as written could change the maths (an array handed to code s2s
    cannot read), or a context manager swallowed an exception raised by differentiated code."""


def _where(where: str) -> tuple[str | None, int | None, str | None]:
    filename, _, line = where.rpartition(":")
    try:
        lineno = int(line)
    except ValueError:
        return None, None, None
    return filename, lineno, linecache.getline(filename, lineno).strip() or None


def _error(where: str, message: str, hint: str | None = None) -> EffectError:
    filename, lineno, text = _where(where)
    return EffectError(message, filename=filename, lineno=lineno, source_line=text, hint=hint)


def _module_root(obj) -> str:
    """The top package an object's code comes from ('' if unknown)."""
    mod = getattr(obj, "__module__", None)
    if not isinstance(mod, str):
        mod = type(obj).__module__
    return (mod or "").split(".")[0]


def _safe_type(value) -> bool:
    """An object whose methods do not change arrays they are given (a logger, a matplotlib Axes)."""
    return _module_root(type(value)) in SAFE_MODULES and not isinstance(value, (list, dict, set, bytearray))


def _holds_array(value, depth: int = 0) -> bool:
    if isinstance(value, np.ndarray):
        return True
    if depth < 3 and isinstance(value, (tuple, list)):
        return any(_holds_array(v, depth + 1) for v in value)
    if depth < 3 and isinstance(value, dict):
        return any(_holds_array(v, depth + 1) for v in value.values())
    return False


def effect(block, where: str, unsafe: bool, names: tuple, checks: tuple, *values) -> None:
    """Run `block(*values)` for its effect, unless it may change an array the maths reads later."""
    if unsafe or any(c & RECEIVER and not _safe_type(v) for c, v in zip(checks, values)):
        for n, c, v in zip(names, checks, values):
            if c & READ_LATER and _holds_array(v):
                how = f"calls a method of the array `{n}`" if c & RECEIVER and isinstance(v, np.ndarray) else \
                    f"hands the array `{n}` to code"
                raise _error(where, f"this statement {how} s2s cannot read, which may change it in place, and "
                             f"the function may read `{n}` afterwards: the derivative would not see the change",
                             f"pass a copy (`np.copy({n})`), call it on a value the function does not read "
                             "again, or do it outside the transformed function")
    block(*values)


def raise_block(block, where: str, *values) -> None:
    """Run a block made of a `raise` statement (it raises)."""
    block(*values)
    raise _error(where, "s2s: this `raise` statement did not raise")


def format_value(block, *values) -> str:
    """The value of an f-string (a block returning it)."""
    return block(*values)


# ----- markers of the statements a `with` or a `try` holds (codegen/regions.py rewrites them) -----
def with_start(key, where, errstate, ctx_name, as_name, cm_block, *values) -> None:
    raise RuntimeError("s2s: a `with` marker was left in generated code")


def try_start(key, where, handle_name, handler, names, *values) -> None:
    raise RuntimeError("s2s: a `try` marker was left in generated code")


def region_end(key, *payload) -> None:
    raise RuntimeError("s2s: a `with`/`try` marker was left in generated code")


class region_context:
    """`with region_context(cm_block, where, errstate, *values) as v:` enters the context manager
    `cm_block(*values)` makes (the user's `with` expression) around differentiated code; it
    refuses a context manager that swallows an exception the body raised (the statements after
    it would run with values the derivative did not see)."""

    def __init__(self, cm_block, where: str, errstate: bool, *values):
        self.cm = cm_block(*values)
        self.where = where

    def __enter__(self):
        return self.cm.__enter__()

    def __exit__(self, exc_type, exc, tb):
        swallowed = self.cm.__exit__(exc_type, exc, tb)
        if swallowed and exc_type is not None:
            raise _error(self.where, f"the context manager swallowed the {exc_type.__name__} raised in its body: "
                         "the statements after the body would run with values the derivative did not see",
                         "let the exception propagate (catch it outside the transformed function)") from exc
        return False


def handle_exception(exc: BaseException, handler, where: str, scope: dict, bindings: tuple):
    """The `except` path of a `try` around differentiated code: run the user's handlers (and
    `finally`) with the values their locals have now; they raise (s2s checked that they always do)."""
    values = {}
    for user_name, generated, constant in bindings:
        if generated is None:
            values[user_name] = constant
        elif generated in scope:
            values[user_name] = scope[generated]
    handler(exc, values)
    raise _error(where, f"s2s: the `except` handler did not raise for {type(exc).__name__}") from exc


EFFECTS = (effect, raise_block, with_start, try_start, region_end)
MARKERS = (with_start, try_start, region_end)
