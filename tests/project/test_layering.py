"""The package is drawn as the pipeline: each module imports only modules of its own layer or below.

Layers, lowest first (docs/design.md, "The map"): runtime and errors; the op helpers the generated
code calls; the frontend (parse, normalize); code generation (emit, disk cache); the rule table;
analyses; optimizations; transforms; backends; the pipeline driver; the transformation objects
(grad, jvp, vmap, jit); the public api.

Every `import` counts, function-level ones included, and so does the implicit import of a
module's parent packages (importing `s2s.rules.table` runs `s2s/rules/__init__.py`); only the root
package `s2s` is left out, since its `__init__` is the public api itself. A module that imports
upward, an import circle, a module no layer names, a module grown past the size limit, or a
private name (`_x`) imported from another module fails here, with the way out in the message.
"""
from __future__ import annotations

import ast
import fnmatch
import os

import pytest

from cases import paths

ROOT = os.path.join(paths.ROOT, "s2s")

# (layer name, module patterns): a pattern ending in ".*" names a folder's modules; the most specific
# pattern wins (the longest), so single modules can sit below their folder's layer.
LAYERS: list[tuple[str, list[str]]] = [
    ("runtime", ["s2s.errors", "s2s.log", "s2s.runtime", "s2s.runtime.*", "s2s.pytree", "s2s.precision",
                 "s2s.frontend", "s2s.frontend.nodes", "s2s.frontend.reads", "s2s.frontend.hooks",
                 "s2s.frontend.ast_build", "s2s.frontend.annotations",
                 "s2s.analysis", "s2s.analysis.resolve", "s2s.rules", "s2s.codegen", "s2s.optimize",
                 "s2s.transforms", "s2s.backends", "s2s.transformations", "s2s.ops", "s2s.ops.*"]),
    # an op family's folder (s2s/ops/<family>/) spans three layers: its helpers, its rules, its Numba versions
    ("op helpers", ["s2s.ops.*.helpers", "s2s.ops.*.*_helpers"]),
    ("frontend", ["s2s.frontend.*"]),
    ("codegen", ["s2s.codegen.*"]),
    ("rules", ["s2s.rules.*", "s2s.custom", "s2s.ops.*.rules", "s2s.ops.*.*_forms"]),
    ("analysis", ["s2s.analysis.*"]),
    ("optimize", ["s2s.optimize.*"]),
    ("transforms", ["s2s.transforms.*", "s2s.ops.*.batching"]),
    ("backends", ["s2s.backends.*", "s2s.runtime.*_numba", "s2s.ops.*.numba", "s2s.ops.*.numba_*"]),
    ("driver", ["s2s.pipeline", "s2s.pipeline_options"]),
    ("transformation objects", ["s2s.transformations.*"]),
    ("api", ["s2s", "s2s.api", "s2s.cli", "s2s.__main__"]),
]

MAX_LINES = 750      # "no module over ~700 lines": split a module by concern before it grows past this


def _modules() -> dict[str, str]:
    out = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                out[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


MODULES = _modules()


def _targets(module: str, node, is_package: bool) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        names = [f"{target}.{a.name}" for a in node.names]
        found = [n for n in names if n in MODULES]
        return found + ([target] if len(found) < len(names) else [])
    return [a.name for a in node.names]


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:k]) for k in range(2, len(parts))]     # not the root package


def imports_of(module: str) -> set[str]:
    path = MODULES[module]
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in _targets(module, node, path.endswith("__init__.py")):
                if target == "s2s" or target.startswith("s2s."):
                    while target not in MODULES and "." in target:      # `import s2s.x.y as z` etc.
                        target = target.rsplit(".", 1)[0]
                    found.add(target)
                    found.update(_parents(target))
    found.discard(module)
    return found


def _matches(pattern: str, module: str) -> bool:
    if pattern.endswith(".*") and pattern.count("*") == 1:
        return module.startswith(pattern[:-1]) and module != pattern[:-2]
    if "*" in pattern:      # a * stands for part of one dotted name, never across a dot
        return fnmatch.fnmatchcase(module, pattern) and module.count(".") == pattern.count(".")
    return module == pattern


def layer_of(module: str) -> tuple[int, str] | None:
    best = None
    for rank, (layer, patterns) in enumerate(LAYERS):
        for p in patterns:
            if _matches(p, module):
                specificity = (len(p) - p.count("*"), "*" not in p)
                if best is None or specificity > best[0]:
                    best = (specificity, rank, layer)
    return None if best is None else (best[1], best[2])


def test_every_module_has_a_layer():
    missing = sorted(m for m in MODULES if layer_of(m) is None)
    assert not missing, f"modules no layer names: {missing}; add them to LAYERS (and docs/design.md's map)"


def test_no_module_imports_a_layer_above_its_own():
    upward = []
    for module in sorted(MODULES):
        own = layer_of(module)
        for target in sorted(imports_of(module)):
            theirs = layer_of(target)
            if own and theirs and theirs[0] > own[0]:
                upward.append(f"{module} ({own[1]}) imports {target} ({theirs[1]})")
    assert not upward, "imports that run up the pipeline (pass a callback or fill a registry from above " \
                       "instead, as frontend/hooks.py does):\n  " + "\n  ".join(upward)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle():
    graph = {m: {t for t in imports_of(m) if t in MODULES and t != "s2s"} for m in MODULES if m != "s2s"}
    circles = _cycles(graph)
    assert not circles, f"import circles: {circles}"


def test_the_check_sees_an_upward_import_and_a_circle():
    # the checks above must be able to fail: a made-up graph with both faults
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    assert layer_of("s2s.frontend.normalize")[0] < layer_of("s2s.transforms.reverse")[0]
    assert layer_of("s2s.rules.table")[1] == "rules"
    assert [layer_of(f"s2s.ops.shape.{m}")[1] for m in ("helpers", "rules", "numba", "numba_joins")] == \
        ["op helpers", "rules", "backends", "backends"]
    assert layer_of("s2s.ops.linalg.products_helpers")[1] == "op helpers"
    assert layer_of("s2s.frontend.hooks")[1] == "runtime"
    assert "s2s.frontend" in imports_of("s2s.frontend.parse") or "s2s.errors" in imports_of("s2s.frontend.parse")


def private_imports() -> list[tuple[str, str]]:
    """(importing module, name) for each private name (one leading underscore) a module of s2s
    imports from another one."""
    found = []
    for module, path in sorted(MODULES.items()):
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("s2s")):
                found += [(module, a.name) for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_private_name_is_imported_from_another_module():
    found = private_imports()
    assert not found, "private names imported from another s2s module (make the name public in its " \
                      "module, dropping the underscore, and update its uses; or keep the code in one module):" \
                      "\n  " + "\n  ".join(f"{m} imports {n}" for m, n in found)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_size(module):
    with open(MODULES[module]) as f:
        lines = sum(1 for _ in f)
    assert lines <= MAX_LINES, f"{module} has {lines} lines (limit {MAX_LINES}): split it by concern"
