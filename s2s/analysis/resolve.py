"""What a call in generated code means.

Calls made by normalization carry the object they resolved to (`s2s_fn`);
calls pasted from rule templates are only spelled (`np.reshape(...)`), so later
passes (fusion, backends) look the spelling up in the generated module's
namespace, falling back to builtins.
"""
from __future__ import annotations

import builtins
from typing import Any

import gast


def resolve_call(call: gast.Call, namespace: dict[str, Any]) -> Any:
    fn = getattr(call, "s2s_fn", None)
    if fn is not None:
        return fn
    parts, f = [], call.func
    while isinstance(f, gast.Attribute):
        parts.append(f.attr)
        f = f.value
    if not isinstance(f, gast.Name):
        return None
    obj = namespace.get(f.id, getattr(builtins, f.id, None))
    for p in reversed(parts):
        obj = getattr(obj, p, None)
    return obj
