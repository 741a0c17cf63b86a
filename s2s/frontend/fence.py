"""Fence: refuse Python constructs s2s cannot transform, at the user's line.

Runs on the parsed function before normalization, so nothing is generated for
a function that would otherwise be transformed wrongly.
"""
from __future__ import annotations

import gast

from ..errors import UnsupportedSyntaxError
from .parse import ParsedFunction
from .nodes import iter_nodes

# node type -> (what it is, what to do instead)
_REFUSED: dict[type, tuple[str, str]] = {
    gast.AsyncWith: ("`async with`", "use a plain synchronous function"),
    gast.AsyncFor: ("`async for`", "use a plain synchronous function"),
    gast.AsyncFunctionDef: ("`async` functions", "use a plain synchronous function"),
    gast.Await: ("`await`", "use a plain synchronous function"),
    gast.Yield: ("generators (`yield`)", "return an array or a tuple instead of yielding"),
    gast.YieldFrom: ("generators (`yield from`)", "return an array or a tuple instead of yielding"),
    gast.Global: ("`global` declarations", "pass the value as an argument and return the new value"),
    gast.Nonlocal: ("`nonlocal` declarations", "pass the value as an argument and return the new value"),
    gast.ClassDef: ("class definitions inside a function", "define the class at module level"),
    gast.SetComp: ("set comprehensions", "write a `for` loop"),
    gast.Match: ("`match` statements", "use if/elif/else"),
    gast.Set: ("set literals", "use a tuple or an array"),
}
if hasattr(gast, "TryStar"):
    _REFUSED[gast.TryStar] = ("`try`/`except*` statements", "move the try/except* outside the differentiated function")
_COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def fence(parsed: ParsedFunction, top: bool = True) -> None:
    """Raise UnsupportedSyntaxError at the first construct s2s refuses (`top`: the function the
    transformed function's caller calls, whose parameters are the transform's arguments)."""
    root = parsed.node
    if isinstance(root, gast.AsyncFunctionDef):
        what, hint = _REFUSED[gast.AsyncFunctionDef]
        raise parsed.source.error(UnsupportedSyntaxError, f"s2s does not support {what}", root, hint)
    args = root.args
    if top and (args.vararg is not None or args.kwarg is not None):
        raise parsed.source.error(
            UnsupportedSyntaxError, "s2s does not support *args / **kwargs parameters", root,
            "list the parameters explicitly")
    for stmt in root.body:
        for node in iter_nodes(stmt):
            if isinstance(node, _COMPREHENSIONS):
                walrus = next((n for n in iter_nodes(node) if isinstance(n, gast.NamedExpr)), None)
                if walrus is not None:
                    raise parsed.source.error(UnsupportedSyntaxError, "s2s does not support `:=` inside a "
                                              "comprehension", walrus, "assign in a `for` loop instead")
            found = _REFUSED.get(type(node))
            if found is not None:
                what, hint = found
                raise parsed.source.error(UnsupportedSyntaxError, f"s2s does not support {what}", node, hint)

