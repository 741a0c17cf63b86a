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
    gast.Try: ("`try` statements", "move the try/except outside the differentiated function"),
    gast.With: ("`with` statements", "move the `with` block outside the differentiated function"),
    gast.AsyncWith: ("`async with`", "use a plain synchronous function"),
    gast.AsyncFor: ("`async for`", "use a plain synchronous function"),
    gast.AsyncFunctionDef: ("`async` functions", "use a plain synchronous function"),
    gast.Await: ("`await`", "use a plain synchronous function"),
    gast.Yield: ("generators (`yield`)", "return an array or a tuple instead of yielding"),
    gast.YieldFrom: ("generators (`yield from`)", "return an array or a tuple instead of yielding"),
    gast.Global: ("`global` declarations", "pass the value as an argument and return the new value"),
    gast.Nonlocal: ("`nonlocal` declarations", "pass the value as an argument and return the new value"),
    gast.Lambda: ("lambdas inside a differentiated function", "define a helper with `def` at module level"),
    gast.FunctionDef: ("nested function definitions", "define the helper at module level and call it"),
    gast.ClassDef: ("class definitions inside a function", "define the class at module level"),
    gast.ListComp: ("list comprehensions", "write a `for` loop that fills an array (y = np.zeros(n); y[i] = ...)"),
    gast.SetComp: ("set comprehensions", "write a `for` loop"),
    gast.DictComp: ("dict comprehensions", "write a `for` loop"),
    gast.GeneratorExp: ("generator expressions", "write a `for` loop or use a NumPy reduction"),
    gast.NamedExpr: ("assignment expressions (`:=`)", "assign on a separate line"),
    gast.Delete: ("`del` statements", "let the variable go out of scope instead"),
    gast.Import: ("imports inside the function", "import at module level"),
    gast.ImportFrom: ("imports inside the function", "import at module level"),
    gast.Raise: ("`raise` statements", "validate inputs before calling the transformed function"),
    gast.Try: ("`try` statements", "move the try/except outside the differentiated function"),
    gast.Match: ("`match` statements", "use if/elif/else"),
    gast.Set: ("set literals", "use a tuple or an array"),
}
if hasattr(gast, "TryStar"):
    _REFUSED[gast.TryStar] = _REFUSED[gast.Try]


def fence(parsed: ParsedFunction) -> None:
    """Raise UnsupportedSyntaxError at the first construct s2s refuses."""
    root = parsed.node
    if isinstance(root, gast.AsyncFunctionDef):
        what, hint = _REFUSED[gast.AsyncFunctionDef]
        raise parsed.source.error(UnsupportedSyntaxError, f"s2s does not support {what}", root, hint)
    args = root.args
    if args.vararg is not None or args.kwarg is not None:
        raise parsed.source.error(
            UnsupportedSyntaxError, "s2s does not support *args / **kwargs parameters", root,
            "list the parameters explicitly")
    for stmt in root.body:
        for node in iter_nodes(stmt):
            found = _REFUSED.get(type(node))
            if found is not None:
                what, hint = found
                raise parsed.source.error(UnsupportedSyntaxError, f"s2s does not support {what}", node, hint)
            if isinstance(node, (gast.For, gast.While)) and node.orelse:
                raise parsed.source.error(
                    UnsupportedSyntaxError, "s2s does not support `else` on loops", node,
                    "use a flag variable set before `break`")
            if isinstance(node, gast.Call):
                for a in node.args:
                    if isinstance(a, gast.Starred):
                        raise parsed.source.error(UnsupportedSyntaxError, "s2s does not support *args in calls",
                                                  node, "pass the arguments one by one")
                for k in node.keywords:
                    if k.arg is None:
                        raise parsed.source.error(UnsupportedSyntaxError, "s2s does not support **kwargs in calls",
                                                  node, "pass keyword arguments by name")
