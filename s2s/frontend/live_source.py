"""Is the source s2s reads the live function's own?  A check before anything is generated from it.

s2s reads a function's source from its file (through `linecache`, at the code's first line) and
generates code from that text.  The file may no longer hold the code Python runs: it was edited
after the module was imported (a function inserted above, a body changed), or the function was
compiled from another text under that file's name (`exec(compile(src, "m.py", "exec"))`).  The
derivative would then be the derivative of whatever stands at the old line now.

`check_live_source` compiles the text s2s reads (the whole file or cell as `linecache` holds it, so
that closures, methods, name mangling and `from __future__` compile as they did) and looks for the
code object of the same qualified name at the same first line; its bytecode, constants (nested
code compared the same way), names, local and free variables must be the live code's.  Line
numbers inside the body are not compared (blank lines moved within the function change nothing s2s
reads).  When nothing matches, it raises `TransformError` naming the function and saying to reload
the module.

The verdict is kept per code object and per text (`linecache` hands back the same list of lines
until the file changes), so a function is compiled once per process, and again only when its file
changed on disk.  Functions in cells of IPython/Jupyter (registered in linecache), code s2s
generated, and test modules whose asserts pytest rewrote (compiled here the way pytest compiled
them) match as they are.
"""
from __future__ import annotations

import __future__
import ast
import inspect
import sys
import threading
import types
from typing import Any, Callable

from ..errors import TransformError

_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    if _feature != "nested_scopes":          # (its flag is CO_NESTED, which any nested function has)
        _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag

_LOCK = threading.Lock()
_VERDICTS: dict[int, tuple] = {}      # id(code) -> (code, lines, matches)
_INDEXES: dict[tuple, tuple] = {}     # (filename, id(lines), flags, variant) -> (lines, {(qualname, line): [code]})
_MAX_ENTRIES = 4096


def check_live_source(fn: Callable, code: types.CodeType, qualname: str) -> None:
    """Raise TransformError when the text s2s reads for `fn` does not compile to `code`."""
    try:
        lines, _ = inspect.findsource(fn)
    except (OSError, TypeError, IndexError):
        return          # (no source: parse_function reports it)
    with _LOCK:
        hit = _VERDICTS.get(id(code))
    if hit is not None and hit[0] is code and hit[1] is lines:
        matches = hit[2]
    else:
        matches = _matches(fn, code, lines)
        with _LOCK:
            if len(_VERDICTS) > _MAX_ENTRIES:
                _VERDICTS.clear()
            _VERDICTS[id(code)] = (code, lines, matches)
    if not matches:
        module = getattr(fn, "__module__", None)
        reload = f"importlib.reload({module})" if module and module != "__main__" else "importlib.reload(module)"
        raise TransformError(
            f"the source of `{qualname}` in {code.co_filename} (line {code.co_firstlineno}) is not the code "
            "Python runs for it: the file was changed after the function was defined (edited since the module "
            "was imported), or the function was compiled from another text under this file name; s2s would "
            "differentiate the text that stands there now",
            filename=code.co_filename, lineno=code.co_firstlineno,
            source_line=lines[code.co_firstlineno - 1].rstrip("\n") if 0 < code.co_firstlineno <= len(lines) else None,
            hint=f"reload the module ({reload}) and take the function from it again, or restart the "
                 "process/kernel; code built with exec/compile must use a file name of its own")


def _matches(fn: Callable, code: types.CodeType, lines: list[str]) -> bool:
    flags = code.co_flags & _FUTURE_FLAGS
    variants = ["plain"]
    glb = getattr(fn, "__globals__", None) or {}
    if "@py_builtins" in glb and "_pytest.assertion.rewrite" in sys.modules:
        variants += ["pytest", "pytest-hook"]         # (a test module: pytest rewrote its asserts)
    want = _shape(code)
    for variant in variants:
        index = _index(code.co_filename, lines, flags, variant)
        if any(_shape(c) == want for c in index.get((code.co_qualname, code.co_firstlineno), ())):
            return True
    return False


def _index(filename: str, lines: list[str], flags: int, variant: str) -> dict:
    key = (filename, id(lines), flags, variant)
    with _LOCK:
        hit = _INDEXES.get(key)
    if hit is not None and hit[0] is lines:
        return hit[1]
    index: dict = {}
    top = _compile("".join(lines), filename, flags, variant)
    if top is not None:
        stack = [top]
        while stack:
            c = stack.pop()
            index.setdefault((c.co_qualname, c.co_firstlineno), []).append(c)
            stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    with _LOCK:
        if len(_INDEXES) > 64:
            _INDEXES.clear()
        _INDEXES[key] = (lines, index)
    return index


def _compile(text: str, filename: str, flags: int, variant: str) -> types.CodeType | None:
    for extra in (0, ast.PyCF_ALLOW_TOP_LEVEL_AWAIT):      # (a notebook cell may await at its top)
        try:
            if variant == "plain":
                return compile(text, filename, "exec", flags=flags | extra, dont_inherit=True)
            from _pytest.assertion.rewrite import rewrite_asserts
            tree = ast.parse(text, filename=filename)
            rewrite_asserts(tree, text.encode(), filename, _HookConfig() if variant == "pytest-hook" else None)
            return compile(tree, filename, "exec", flags=flags | extra, dont_inherit=True)
        except SyntaxError:
            continue
        except Exception:       # (no longer compiles at all, or pytest's API changed: no match)
            return None
    return None


class _HookConfig:
    """What pytest's assert rewriting asks of its config: the pass hook turned on."""

    def getini(self, name: str) -> Any:
        return name == "enable_assertion_pass_hook"


def _shape(code: types.CodeType) -> tuple:
    """What a code object does, without where its lines are."""
    return (code.co_name, code.co_qualname, code.co_code, code.co_names, code.co_varnames, code.co_freevars,
            code.co_cellvars, code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags,
            tuple(_const_key(k) for k in code.co_consts))


def _const_key(value: Any) -> Any:
    if isinstance(value, types.CodeType):
        return ("code", _shape(value))
    if isinstance(value, tuple):
        return ("tuple", tuple(_const_key(v) for v in value))
    if isinstance(value, frozenset):
        return ("frozenset", tuple(sorted(repr(_const_key(v)) for v in value)))
    return (type(value).__name__, repr(value))
