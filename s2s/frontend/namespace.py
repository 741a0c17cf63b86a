"""The globals every generated module starts with: numpy, math and the op helpers.

HELPER_MODULES lists the modules whose public functions generated code may call by bare name
(runtime support and the op helpers beside each rule family); emit writes `from <module> import
...` lines for them, so a generated file runs on its own. A module's NOT_FOR_GENERATED_CODE names
public functions it shares with other s2s modules only: those stay out.
"""
from __future__ import annotations

import importlib
import math
import sys
from typing import Any

import numpy as np

# the op helpers, one module beside each rule family (no two define the same public name)
OP_HELPER_MODULES = ["s2s.ops.elementwise.helpers", "s2s.ops.reductions.helpers", "s2s.ops.shape.helpers",
                     "s2s.ops.linalg.helpers", "s2s.ops.linalg.products_helpers", "s2s.ops.fft.helpers",
                     "s2s.ops.special.helpers", "s2s.ops.linalg.sparse_helpers"]
# helper modules of a library s2s imports only when the user's code did (rules/registry.py's
# defer_family): in the namespace once that library is imported
LIBRARY_OF_HELPERS = {"s2s.ops.special.helpers": "scipy.special"}
HELPER_MODULES = ["s2s.runtime", "s2s.runtime.batching", "s2s.runtime.fused", "s2s.runtime.effects",
                  "s2s.runtime.collectives", *OP_HELPER_MODULES]


def base_namespace() -> dict[str, Any]:
    """Globals every generated module starts with: np, math and the public
    functions of the helper modules (runtime support, op helpers)."""
    ns: dict[str, Any] = {"np": np, "math": math}
    for modname in HELPER_MODULES:
        library = LIBRARY_OF_HELPERS.get(modname)
        if library is not None and library not in sys.modules and modname not in sys.modules:
            continue
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        internal = getattr(mod, "NOT_FOR_GENERATED_CODE", ())
        for name in dir(mod):
            obj = getattr(mod, name)
            if not name.startswith("_") and name not in internal and callable(obj) \
                    and getattr(obj, "__module__", "") == mod.__name__:
                ns[name] = obj
    return ns
