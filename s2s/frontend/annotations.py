"""The facts passes attach to gast nodes for later passes, declared in one place (as Tangent's
annotations.py): each key below with what it means, who sets it and who reads it.

A fact is stored as the node attribute named by its key (`s2s_...`), so `frontend.nodes.clone`
copies it with the node and the emitted source never shows it. Read it with
getanno(node, KEY, default), write it with setanno(node, KEY, value), test it with hasanno.
"""
from __future__ import annotations

from typing import Any

# ----- the frontend's, read by every later stage ---------------------------------------
FN = "s2s_fn"                       # Call: the Python function it calls, resolved (rules are looked up by it)
SRC = "s2s_src"                     # node: the SourceInfo of the code it came from (inlined code: the helper's)
META = "s2s_meta"                   # Tuple: the container literal it stands for, (kind, keys, class): a dict, ...
FROM = "s2s_from"                   # list or dict literal: the split variable it stands for (binding it shares
                                    # that container)

# ----- reverse mode: set by its forward sweep, read by its backward sweep (transforms/reverse.py)
DEFINED_BEFORE = "s2s_defined_before"   # If/For/While: the names defined before it (where zeros can be made)
POPPED_TEST = "s2s_popped_test"     # If: the name its taken branch is saved under (its body can change its
                                    # test), or None
TAPE_KEY = "s2s_tape_key"           # indexed write: the tape the slot it overwrites is pushed on
UNSAVED = "s2s_unsaved"             # For (typed tapes): its variable is not saved before it, nor restored after
TRIPS = "s2s_trips"                 # While: the name counting its trips (the backward loop runs that many)
SAVE_KEY = "s2s_save_key"           # save or restore: the variable it keeps ("for:i" for a loop's), which
                                    # analysis/saves.py drops when the backward sweep never reads it
GRAD_OF = "s2s_grad_of"             # statement of a backward sweep: emitted under a "grad of" comment

# ----- emitted code's layout (codegen/emit.py) -----------------------------------------------
SECTION = "s2s_section"             # statement: the section comment above it ("forward sweep", "fused: ...")

# ----- batching (transforms/batching.py, batching_ops.py) -------------------------------------
BATCHED = "s2s_batched"             # batched right-hand side: whether its value carries the batch axis

# ----- fusion (transforms/fuse.py, fuse_rows.py), read by the Numba lowering -----------------
FUSED = "s2s_fused"                 # If guarding a fused loop: its FusedRun
ROWS_DONE = "s2s_rows_done"         # If guarding a fused loop: fuse_rows has looked at it
INNER = "s2s_inner"                 # outer loop of a two-deep fused loop: the per-element inner loop
ROWS_ACCUMULATE = "s2s_rows_accumulate"     # outer loop of fused rows: the rows add into one sum (no prange)

# ----- backends ----------------------------------------------------------------------------
EFFECT_FUNCTIONS = "s2s_effect_functions"   # lowered FunctionDef: the functions outlined for object mode,
                                            # emitted above it
PARALLEL_TWIN = "s2s_parallel_twin"         # fused For under the default target: runs as a prange
                                            # twin over many elements (backends/parallel_twins.py)


def getanno(node: Any, key: str, default: Any = None) -> Any:
    return getattr(node, key, default)


def setanno(node: Any, key: str, value: Any) -> None:
    setattr(node, key, value)


def hasanno(node: Any, key: str) -> bool:
    return hasattr(node, key)
