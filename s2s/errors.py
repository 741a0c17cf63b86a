"""The s2s error family.

Every error a user's code can cause carries the user's file, line, column and
the offending source line, plus a hint saying what to do instead.
"""
from __future__ import annotations


class S2SError(Exception):
    """Base class of every error s2s raises on purpose."""


class TransformError(S2SError):
    """A function could not be transformed; points at the user's source.

    Attributes:
        filename, lineno, col: where in the user's code.
        source_line: the text of that line.
        hint: what to do instead.
        stack: for an error in code s2s inlined (a helper, a library function), the calls that led
            there, outermost first: (function, file, line, source line) each.
    """

    def __init__(self, message: str, *, filename: str | None = None,
                 lineno: int | None = None, col: int | None = None,
                 source_line: str | None = None, hint: str | None = None,
                 stack: tuple | None = None):
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.source_line = source_line
        self.hint = hint
        self.stack = stack
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.filename is not None:
            where = f'File "{self.filename}", line {self.lineno}'
            if self.col is not None:
                where += f", column {self.col + 1}"
            parts.append(where)
        if self.source_line:
            parts.append("    " + self.source_line.strip())
        parts.append(self.message)
        if getattr(self, "stack", None):
            parts.append("in the code s2s inlined there (outermost call first):")
            for function, filename, lineno, text in self.stack:
                parts.append(f"  in {function} at {filename}:{lineno}" + (f": {text.strip()}" if text else ""))
        if self.hint:
            parts.append("hint: " + self.hint)
        return "\n".join(parts)


class UnsupportedSyntaxError(TransformError):
    """The function uses Python syntax that s2s cannot transform."""


class NoRuleError(TransformError):
    """A call to a function that has neither readable source nor a rule."""


class RecursionNotSupportedError(TransformError):
    """A user function calls itself (directly or indirectly)."""


class NonDifferentiableError(TransformError):
    """The requested derivative does not exist (integer input, non-scalar output, ...)."""


class ArgumentError(S2SError, ValueError):
    """Bad arguments to an s2s API function (argnums out of range, ...)."""


class CollectiveError(S2SError, RuntimeError):
    """A collective that cannot complete: its axis name is not bound by a pmap, the devices hand in
    values of different shapes, another device failed, or it timed out."""


class SharedArrayError(S2SError, ValueError):
    """`y += e` where `y` shares its array with another variable still read: NumPy would change
    both; s2s's transforms treat the update as `y = y + e`, a new array."""
