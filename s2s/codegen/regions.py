"""`with` and `try` around differentiated code, as Python blocks in the emitted source.

Normalization (frontend/effects.py) keeps the statements a `with` or a `try` holds in the normal
form's flat statement lists, between two markers: `with_start(key, ...)` / `try_start(key, ...)`
and `region_end(key, ...)` (runtime/effects.py). The transforms and optimizations see them as
calls made for their effect and keep them, in order, in the same statement list (reverse mode's
forward sweep keeps the user's statements in order, pushes included; for `np.errstate` its
backward sweep mirrors them around the body's derivative). Just before the Python source is
written, `restore_regions` turns each pair into the block it stands for:

    with region_context(cm_block, where, errstate, values...) as v:
        <statements between the markers>

    try:
        <statements between the markers>
    except BaseException as s2s_exception:
        handle_exception(s2s_exception, handler, where, locals(), ((user name, generated name,
                         constant), ...))

A pair split across statement lists (which no pass does today) is an error here, not code that
would enter a context and never leave it.
"""
from __future__ import annotations

from typing import Any

import gast

from ..runtime import effects as rte
from ..analysis.resolve import resolve_call
from ..errors import TransformError
from ..frontend.ast_build import const, copy_loc, name


def restore_regions(fdef: gast.FunctionDef, namespace: dict[str, Any]) -> gast.FunctionDef:
    """Rewrite the marker pairs of `fdef` into `with` / `try` blocks (see the module docstring)."""
    if not any(_marker(s, namespace) is not None for s in _all_statements(fdef.body)):
        return fdef
    fdef.body = _block(fdef.body, namespace)
    return fdef


def _all_statements(stmts: list):
    for s in stmts:
        yield s
        for field in ("body", "orelse", "finalbody"):
            yield from _all_statements(getattr(s, field, None) or [])
        for h in getattr(s, "handlers", None) or []:
            yield from _all_statements(h.body)


def _marker(s, namespace):
    if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call):
        fn = resolve_call(s.value, namespace)
        if any(fn is m for m in rte.MARKERS):
            return fn
    return None


def _key(s) -> Any:
    arg = s.value.args[0] if s.value.args else None
    return arg.value if isinstance(arg, gast.Constant) else None


def _block(stmts: list, namespace) -> list:
    out: list = []
    i = 0
    while i < len(stmts):
        s = stmts[i]
        for field in ("body", "orelse"):
            sub = getattr(s, field, None)
            if isinstance(sub, list) and isinstance(s, (gast.If, gast.For, gast.While)):
                setattr(s, field, _block(sub, namespace) or ([gast.Pass()] if field == "body" else []))
        fn = _marker(s, namespace)
        if fn is None:
            out.append(s)
            i += 1
            continue
        if fn is rte.region_end:
            raise _split(s)
        key = _key(s)
        j = next((k for k in range(i + 1, len(stmts)) if _marker(stmts[k], namespace) is rte.region_end
                  and _key(stmts[k]) == key), None)
        if j is None:
            raise _split(s)
        body = _block(stmts[i + 1:j], namespace) or [gast.Pass()]
        out.append(copy_loc(_with(s, body) if fn is rte.with_start else _try(s, body), s))
        i = j + 1
    return out


def _split(s) -> TransformError:
    src = getattr(s, "s2s_src", None)
    where = dict(filename=src.filename, lineno=s.lineno, source_line=src.line(s.lineno)) if src is not None else {}
    return TransformError("s2s: the statements of this `with`/`try` block were separated while generating code",
                          hint="please report this; move the `with`/`try` outside the transformed function meanwhile",
                          **where)


def _with(s, body: list) -> gast.With:
    _key_arg, where, errstate, as_name, block, *values = s.value.args
    call = gast.Call(func=name("region_context"), args=[block, where, errstate] + list(values), keywords=[])
    call.s2s_fn = rte.region_context
    target = name(as_name.value, gast.Store()) if isinstance(as_name, gast.Constant) and as_name.value else None
    return gast.With(items=[gast.withitem(context_expr=call, optional_vars=target)], body=body, type_comment=None)


def _try(s, body: list) -> gast.Try:
    key, where, block, names, *values = s.value.args
    exc = f"s2s_exception_{key.value}"
    bindings = []
    for user, v in zip(names.elts, values):
        if isinstance(v, gast.Name):
            bindings.append(gast.Tuple([const(user.value), const(v.id), const(None)], gast.Load()))
        else:
            bindings.append(gast.Tuple([const(user.value), const(None), v], gast.Load()))
    call = gast.Call(func=name("handle_exception"),
                     args=[name(exc), block, where, gast.Call(func=name("locals"), args=[], keywords=[]),
                           gast.Tuple(bindings, gast.Load())], keywords=[])
    call.s2s_fn = rte.handle_exception
    handler = gast.ExceptHandler(type=name("BaseException"), name=name(exc, gast.Store()),
                                 body=[copy_loc(gast.Expr(value=call), s)])
    copy_loc(handler, s)
    return gast.Try(body=body, handlers=[handler], orelse=[], finalbody=[])
