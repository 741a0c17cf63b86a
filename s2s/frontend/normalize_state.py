"""The state of one normalization, declared in one place.

`Normalizer` (normalize.py) is made of one part per concern (resolution.py, inlining.py,
statements.py, loops.py, anf.py, containers.py, sequences.py, functions.py, foreign.py, effects.py
with effect_regions.py); they share what they learn about the function being normalized through
this record, `normalizer.state`, and through nothing else: a part holds no attribute of its own
(tests/frontend/test_normalize_state.py checks it). Each field says what it holds, which parts write it
(besides `start`, which sets every field) and which read it; the test checks that every part
using a field is named there. A part that calls another part's method leaves that field to the
method.
"""
from __future__ import annotations

import builtins
import dataclasses
from typing import Any

import gast

from .ast_build import Namer
from .namespace import base_namespace
from .nodes import iter_nodes, names_in
from .parse import ParsedFunction
from .statements import Frame


@dataclasses.dataclass(slots=True)     # (a field not declared here cannot be set)
class NormalizeState:
    # ----- the input ---------------------------------------------------------------------------
    # the function normalize() was given (its frame is the outermost one). Read: normalize.py
    # (entry), effects.py (is this statement in the top function?)
    top: ParsedFunction
    # functions whose calls stay calls instead of being inlined (pipeline.py's helpers).
    # Read: inlining.py
    keep_calls: frozenset
    # free names of the top function that are not its locals: they resolve to its globals.
    # Written: normalize.py (its locals taken out). Read: resolution.py
    global_names: set[str]

    # ----- the output: the generated module ----------------------------------------------------
    # globals of the generated module (np, the helpers, bound values, blocks of side effects).
    # Written: resolution.py (global_ref), inlining.py, effects.py. Read: resolution.py,
    # inlining.py, foreign.py (sparse matrices), normalize.py (the result)
    ns: dict[str, Any]
    # every name in use, and fresh ones (temporaries, renamed locals of inlined helpers).
    # Written (fresh names): every part. Read (is a name taken?): resolution.py
    namer: Namer
    # source files read, the top function's and every inlined helper's (keys of the disk cache).
    # Written: inlining.py. Read: normalize.py (the result)
    deps: set[str]
    # globals of the generated code bound to Python objects whose attributes the code reads at
    # run time. Written: resolution.py, inlining.py. Read: normalize.py (the result)
    object_names: set[str]

    # ----- where normalization is ----------------------------------------------------------------
    # the function whose statements are being normalized: its renames, locals, loop stack, early
    # return flags (statements.py's Frame). Written: normalize.py (the top one), inlining.py (an
    # inlined callee's, while its body is normalized). Read: normalize.py, resolution.py,
    # inlining.py, statements.py, loops.py, anf.py, sequences.py, functions.py, foreign.py,
    # effects.py, effect_regions.py
    frame: Frame | None = None
    # functions being inlined, outermost first, to refuse unbounded recursion.
    # Written and read: inlining.py
    inline_stack: list[Any] = dataclasses.field(default_factory=list)
    # id(function) -> times it was inlined (recursion that unrolls too often is refused).
    # Written and read: inlining.py
    inline_counts: dict[int, int] = dataclasses.field(default_factory=dict)
    # the statement just normalized surely returns (the statements after it are dropped).
    # Written and read: statements.py
    always_leaves: bool = False
    # loops around the statement whose trip count is not static.
    # Written: loops.py. Read: containers.py, sequences.py
    dynamic_depth: int = 0

    # ----- what variables hold -------------------------------------------------------------------
    # split tuples/lists/dicts: variable -> the variables of its elements.
    # Written: containers.py, sequences.py, statements.py. Read: those and anf.py, effects.py,
    # functions.py, inlining.py, loops.py
    aggregates: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    # split container variable -> (kind, keys, class name) of the container it was.
    # Written: containers.py, sequences.py, statements.py. Read: anf.py, containers.py,
    # functions.py, inlining.py, loops.py, sequences.py, statements.py
    agg_meta: dict[str, tuple] = dataclasses.field(default_factory=dict)
    # variable -> fields of the np.linalg namedtuple it holds (`r.Q` becomes `r[0]`).
    # Written: anf.py. Read: anf.py, statements.py
    results: dict[str, tuple] = dataclasses.field(default_factory=dict)
    # locals holding one Python object for the whole call (a method's `self`): their attributes
    # are read when the code runs, their methods are inlined. Written: inlining.py, statements.py.
    # Read: resolution.py, foreign.py
    objects: dict[str, Any] = dataclasses.field(default_factory=dict)
    # variables holding a function value (a PyFunction, Closure or Partial of functions.py).
    # Written: functions.py, containers.py, loops.py, statements.py. Read: those and
    # effects.py, inlining.py, sequences.py
    functions: dict[str, Any] = dataclasses.field(default_factory=dict)
    # variables known to hold a constant (a key, an index).
    # Written: containers.py, loops.py, statements.py. Read: those and anf.py, sequences.py
    constants: dict[str, Any] = dataclasses.field(default_factory=dict)

    # ----- lists (sequences.py) ------------------------------------------------------------------
    # names holding the same list object (an append through one is seen through the others).
    # Written and read: sequences.py
    list_groups: dict[str, set] = dataclasses.field(default_factory=dict)
    # names whose list changed through another name of its group.
    # Written: sequences.py. Read: sequences.py, containers.py
    stale: set[str] = dataclasses.field(default_factory=set)
    # list grown in a kept loop -> (rows, count, open).
    # Written: containers.py, sequences.py, statements.py. Read: those and anf.py, effects.py,
    # inlining.py
    row_lists: dict[str, tuple] = dataclasses.field(default_factory=dict)
    # array variable -> {variable holding it by copy: what that variable is}, to refuse a write
    # Python would see through both. Written: containers.py. Read: statements.py, sequences.py
    holders: dict[str, dict] = dataclasses.field(default_factory=dict)
    # variable appended (by reference, in Python) to a list kept as rows -> that list, to refuse a
    # later write to it. Written: sequences.py. Read: statements.py
    appended_rows: dict[str, str] = dataclasses.field(default_factory=dict)
    # split list -> dynamic_depth where it was made (grown deeper: refused).
    # Written: containers.py. Read: containers.py, sequences.py
    list_depth: dict[str, int] = dataclasses.field(default_factory=dict)

    # ----- caches per function node (id(node) -> (node, what was computed)) --------------------
    # the in-place write checks of aliases.py. Written and read: statements.py
    alias_checks: dict[int, tuple] = dataclasses.field(default_factory=dict)
    # how often each local is assigned. Written and read: resolution.py
    store_counts: dict[int, tuple] = dataclasses.field(default_factory=dict)
    # what the function's source says around its statements (effect_blocks.SourceScan).
    # Written and read: effects.py
    effect_scans: dict[int, tuple] = dataclasses.field(default_factory=dict)

    @classmethod
    def start(cls, parsed: ParsedFunction, keep_calls: frozenset = frozenset()) -> NormalizeState:
        """The state before the first statement of `parsed` is normalized."""
        ns = base_namespace()
        taken = set(ns) | set(dir(builtins))
        for n in iter_nodes(parsed.node):
            if isinstance(n, gast.Name):
                taken.add(n.id)
        taken |= {a.id for a in parsed.node.args.args}
        return cls(top=parsed, keep_calls=keep_calls, global_names=names_in(parsed.node), ns=ns,
                   namer=Namer(taken), deps={parsed.source.filename}, object_names=set(),
                   inline_stack=[parsed.fn])
