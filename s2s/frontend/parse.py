"""Parse: a live Python function -> a gast FunctionDef with absolute line numbers.

Invariants of the result (`ParsedFunction`):
- `node` is a `gast.FunctionDef` without decorators; a lambda becomes a
  `def` whose body is `return <expr>`.
- every node's `lineno` is the line in the user's file, so errors and
  generated comments point at the user's code.
- `namespace` resolves free names: closure cells first, then globals, then builtins.
"""
from __future__ import annotations

import builtins
import dataclasses
import inspect
import linecache
import textwrap
from typing import Any, Callable

import gast

from ..errors import TransformError, UnsupportedSyntaxError
from .nodes import iter_nodes
from .live_source import check_live_source


@dataclasses.dataclass(frozen=True)
class SourceInfo:
    """Where a function's source lives; used to build errors.  An inlined body's SourceInfo also
    has its call site, `caller` = (the caller's SourceInfo, line, column), and `label`, the callee
    as the call spells it: its errors are located at the user's line (frontend/call_sites.py)."""
    filename: str
    firstlineno: int
    qualname: str
    caller: Any = dataclasses.field(default=None, compare=False, repr=False)
    label: str | None = dataclasses.field(default=None, compare=False)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):           # (immutable: AST copies share it)
        return self

    def inlined_at(self, caller: "SourceInfo", node: Any, label: str | None) -> "SourceInfo":
        """This source as a body inlined at `node` (a call) of the code `caller` describes."""
        return dataclasses.replace(self, caller=(caller, getattr(node, "lineno", None) or caller.firstlineno,
                                                 getattr(node, "col_offset", None)), label=label)

    def line(self, lineno: int | None) -> str:
        if lineno is None:
            return ""
        return linecache.getline(self.filename, lineno).rstrip("\n")

    def error(self, cls: type[TransformError], message: str, node: Any = None,
              hint: str | None = None) -> TransformError:
        lineno = getattr(node, "lineno", None) or self.firstlineno
        col = getattr(node, "col_offset", None)
        from .call_sites import is_generated, located_error
        if self.caller is not None or is_generated(self.filename):
            return located_error(self, cls, message, lineno, col, hint)
        return cls(message, filename=self.filename, lineno=lineno, col=col,
                   source_line=self.line(lineno), hint=hint)


@dataclasses.dataclass
class ParsedFunction:
    fn: Callable
    node: gast.FunctionDef
    source: SourceInfo
    namespace: dict[str, Any]


def _closure_vars(fn: Callable) -> dict[str, Any]:
    code = fn.__code__
    cells = fn.__closure__ or ()
    out = {}
    for name, cell in zip(code.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # empty cell: not yet assigned
            pass
    return out


def function_namespace(fn: Callable) -> dict[str, Any]:
    ns: dict[str, Any] = dict(vars(builtins))
    ns.update(getattr(fn, "__globals__", {}))
    ns.update(_closure_vars(fn))
    return ns


def source_of_decorated(fn: Callable) -> Callable:
    """The function whose source s2s reads for `fn`.  A functools.lru_cache / cache wrapper only
    remembers results: its function is read.  Any other wrapper (functools.wraps) is code that runs
    around the function (scaling, clipping, logging): reading the wrapped function's source would
    skip it, so it is refused."""
    import functools
    while isinstance(fn, functools._lru_cache_wrapper):
        fn = fn.__wrapped__
    inner = getattr(fn, "__wrapped__", None)
    if inner is None or not callable(inner):
        return fn
    code = getattr(fn, "__code__", None)
    where = f" ({code.co_filename}, line {code.co_firstlineno})" if code is not None else ""
    name = getattr(inner, "__qualname__", repr(inner))
    wrapper = getattr(code, "co_qualname", None) or repr(fn)
    raise TransformError(
        f"`{name}` is decorated: the wrapper `{wrapper}`{where} runs around it, and "
        "s2s transforms a function's own source, so it would skip what the wrapper does",
        filename=getattr(getattr(inner, "__code__", None), "co_filename", None),
        lineno=getattr(getattr(inner, "__code__", None), "co_firstlineno", None),
        hint="transform the undecorated function (f.__wrapped__ if the wrapper does not change the result), "
             "or write what the wrapper does inside the function")


def parse_function(fn: Callable) -> ParsedFunction:
    """Read `fn`'s source and return its gast definition.

    Raises:
        TransformError: the source cannot be read (C functions, interactive
            lambdas) or holds more than one lambda on the line.
    """
    fn = source_of_decorated(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TransformError(
            f"cannot read the source of {fn!r}: it is not a Python function",
            hint="register a rule for it (s2s.custom_vjp / s2s.adjoint) or wrap it in a Python function")
    filename = code.co_filename
    firstlineno = code.co_firstlineno
    info = SourceInfo(filename, firstlineno, getattr(fn, "__qualname__", fn.__name__))
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise TransformError(
            f"cannot read the source of {fn.__qualname__}: {exc}",
            filename=filename, lineno=firstlineno,
            hint="define the function in a .py file (not an interactive prompt or exec string)") from None
    check_live_source(fn, code, info.qualname)      # (the file may no longer hold the code Python runs)
    source = textwrap.dedent("".join(lines))
    if fn.__name__ == "<lambda>":
        node = _lambda_as_def(source, info, start, code)
    else:
        try:
            module = gast.parse(source)
        except SyntaxError as exc:
            raise info.error(UnsupportedSyntaxError, f"cannot parse the source of {fn.__qualname__}: {exc.msg}") from None
        node = module.body[0]
        if not isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
            raise info.error(TransformError, f"expected a function definition for {fn.__qualname__}")
        gast.increment_lineno(module, start - 1)
    node.decorator_list = []
    return ParsedFunction(fn, node, info, function_namespace(fn))


def _lambda_by_position(code) -> gast.Lambda | None:
    """The lambda whose body holds the code's instructions (their line and column positions,
    Python 3.11+), found in its file's source: the innermost lambda containing them all."""
    import linecache
    import dis
    spots = []
    for ins in dis.get_instructions(code):
        p = ins.positions
        # (the frame's set-up and return carry the line but no columns of the body: (l, l, 0, 0))
        if p is not None and None not in p and (p.col_offset, p.end_col_offset) != (0, 0):
            spots.append((p.lineno, p.col_offset, p.end_lineno, p.end_col_offset))
    if not spots:
        return None
    try:
        tree = gast.parse("".join(linecache.getlines(code.co_filename)))
    except (SyntaxError, ValueError):
        return None
    first = min((line, col) for line, col, _, _ in spots)
    last = max((end_line, end_col) for _, _, end_line, end_col in spots)
    holding = []
    for n in iter_nodes(tree):
        if isinstance(n, gast.Lambda) and getattr(n.body, "end_lineno", None) is not None:
            lo, hi = (n.body.lineno, n.body.col_offset), (n.body.end_lineno, n.body.end_col_offset)
            if lo <= first and last <= hi:
                holding.append((lo, (-hi[0], -hi[1]), n))
    # nested lambdas hold each other's spans: the innermost starts last (and ends first)
    return max(holding, key=lambda h: h[:2])[2] if holding else None


def _lambda_as_def(source: str, info: SourceInfo, start: int, code=None) -> gast.FunctionDef:
    """Turn the one lambda on `source`'s line(s) into `def <lambda>(...): return ...`; with several
    on the line, the one whose body holds `code`'s instruction positions."""
    text = source.strip()
    module = None
    # getsource returns whole lines; trim trailing text until the line parses.
    for end in range(len(text), 0, -1):
        try:
            module = gast.parse(text[:end])
            break
        except SyntaxError:
            continue
    lambdas = [n for n in iter_nodes(module)] if module is not None else []
    lambdas = [n for n in lambdas if isinstance(n, gast.Lambda)]
    # lines counted from `start` in the trimmed source; from the file's top when found by position
    lam, offset = (lambdas[0], start - 1) if len(lambdas) == 1 else (None, 0)
    if lam is None and code is not None:
        lam = _lambda_by_position(code)
    if lam is None:
        raise TransformError(
            "cannot isolate the source of this lambda" +
            (f" ({len(lambdas)} lambdas on the line)" if lambdas else ""),
            filename=info.filename, lineno=start, source_line=info.line(start),
            hint="define the function with `def` at module level")
    ret = gast.Return(value=lam.body)
    fdef = gast.FunctionDef(name="lambda_fn", args=lam.args, body=[ret], decorator_list=[],
                            returns=None, type_comment=None, type_params=[])
    gast.copy_location(ret, lam)
    gast.copy_location(fdef, lam)
    gast.increment_lineno(fdef, offset)
    return fdef
