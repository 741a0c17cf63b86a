"""Normalize: a parsed user function -> one function in A-normal form (ANF).

What resolution, inlining and desugaring leave behind (later passes rely on it):

- every call is resolved to an object with a rule (`node.s2s_fn`), spelled by
  the rule's canonical name (``np.sin``); calls to the user's own Python
  functions are inlined (their locals renamed), methods become functions
  (``x.sum(1)`` -> ``np.sum(x, 1)``, ``x.T`` -> ``np.transpose(x)``);
- statements are only
    ``name = <simple>``          simple: an atom, ``a OP b``, ``OP a``,
                                  ``a CMP b``, ``f(atoms)``, ``a[index]``, ``a.attr``
    ``name[index] = atom``        an indexed write
    ``f(atoms)``                  a call for its effect (tape push, print)
    ``if name: ... else: ...``
    ``for name in range(atoms): ...``   (no break/continue/return inside)
    ``while name: ...``           (the condition is recomputed at the end of the body)
    ``return atom`` / ``return (atom, ...)``  exactly once, last
  where an atom is a Name, a Constant, or (as a call argument) a tuple/list of atoms;
- augmented assignment, tuple unpacking, chained comparisons, ``and``/``or``,
  conditional expressions, ``break``/``continue`` and early ``return`` are
  desugared (flags guard the statements they skip);
- tuples and lists built from literals are split into one variable per element
  (``parts = [a, b]`` -> ``parts_0 = a; parts_1 = b``), so no container reaches
  the transforms;
- every statement keeps the user's line number (``lineno``) and the source it
  came from (``s2s_src``: the SourceInfo of the file).

The work is split by concern into the mixins `Normalizer` is made of, each module stating the part
of this it leaves behind: resolution.py (names and attributes -> Python objects, globals of the
generated code), inlining.py (calls: rule calls stay, other callees are inlined), statements.py
(statement desugaring), loops.py (for/while), anf.py (expressions in A-normal form), containers.py
and sequences.py (tuples, lists and dicts split into variables), functions.py (function values),
foreign.py (np.matrix, scipy.sparse), effects.py (side effects kept as written). What they share
is one declared record, `NormalizeState` (normalize_state.py: each field with who writes and who
reads it), handed to `Normalizer`; the checks of the finished body (`materialize_functions`,
`check_sparse_uses`) are passes of their own, run after it by `normalize`. ast_build.py holds the
node builders every later pass uses too.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import gast

from ..errors import UnsupportedSyntaxError
from .anf import ExpressionANF
from .ast_build import assign, const, copy_loc, scope_locals
from .containers import SplitContainers
from .fence import fence
from .foreign import ForeignValues, check_sparse_uses
from .functions import FunctionValues, materialize_functions
from .inlining import CallInlining
from .effects import SideEffects
from .sequences import SequenceBuilding
from .loops import LoopDesugaring
from .normalize_state import NormalizeState
from .nodes import clone, iter_nodes
from .parse import ParsedFunction, SourceInfo
from .resolution import NameResolution, constant
from .statements import Frame, StatementDesugaring, always_returns, has_early_return


@dataclasses.dataclass
class NormalizedFunction:
    node: gast.FunctionDef
    namespace: dict[str, Any]   # globals of the generated module
    source: SourceInfo
    params: list[str]
    deps: list[str] = dataclasses.field(default_factory=list)   # source files read (for the disk cache)
    objects: tuple = ()         # globals holding Python objects whose attributes the code reads at run time


class Normalizer(SideEffects, StatementDesugaring, LoopDesugaring, SequenceBuilding, ExpressionANF, CallInlining,
                 FunctionValues, SplitContainers, NameResolution, ForeignValues):
    """The pass that normalizes the body (`normalize_body`) and the function around it
    (`function_def`); the methods of each concern come from the mixins, and the state they share is
    `state` (a NormalizeState, normalize_state.py)."""

    def __init__(self, state: NormalizeState):
        self.state = state      # everything the parts share (normalize_state.py)

    # ----- errors -------------------------------------------------------------
    def error(self, cls, msg, node, hint=None):
        # (a node read from an inlined body carries that body's source: frontend/call_sites.py)
        return (getattr(node, "s2s_src", None) or self.state.frame.parsed.source).error(cls, msg, node, hint)

    # ----- the body: resolution, inlining, desugaring, ANF ---------------------------------------
    def normalize_body(self) -> tuple[list, dict[str, str]]:
        """The top function's statements in A-normal form, and how its locals were renamed."""
        state = self.state
        fdef = state.top.node
        params = [a.id for a in fdef.args.args]
        if fdef.args.posonlyargs:
            raise state.top.source.error(UnsupportedSyntaxError, "positional-only parameters are not supported", fdef)
        kwonly = [a.id for a in fdef.args.kwonlyargs]
        kw_defaults = dict(getattr(state.top.fn, "__kwdefaults__", None) or {})
        if any(k not in kw_defaults for k in kwonly):
            raise state.top.source.error(UnsupportedSyntaxError, "a keyword-only parameter without a default: pass "
                                         "it at the call (`s2s.grad(f)(x, key=value)`)", fdef)
        local = params + sorted((scope_locals(fdef.body) | set(kwonly)) - set(params))
        state.global_names -= set(local)
        body_src = list(fdef.body)
        if not always_returns(body_src):
            body_src.append(copy_loc(gast.Return(value=None), body_src[-1] if body_src else fdef))
        early = has_early_return(body_src)
        # A local that shadows a name generated code needs (np, push, ...) is renamed.
        rename = {n: (state.namer.fresh(n + "_") if n in state.ns else n) for n in local}
        frame = Frame(state.top, rename, set(local), None, None)
        state.frame = frame
        body: list = []
        if early:
            frame.result = state.namer.fresh("result")
            frame.live = state.namer.fresh("alive")
            body.append(assign(frame.live, const(True), fdef))
        for k in kwonly:     # a keyword-only parameter not passed: its default (passed ones: calls.py)
            default = kw_defaults[k]
            self.bind_value(rename[k], constant(default) if isinstance(default, (int, float, str, bool, type(None)))
                            else self.global_ref(k, default, fdef), body, fdef)
        out, _ = self.stmts(body_src)
        body += out
        if early:
            ret = gast.Return(value=self.emit_literal(self.aggregate_or_name(frame.result)))
            copy_loc(ret, body_src[-1])
            body.append(ret)
        return body, rename

    # ----- the function around it --------------------------------------------------------------
    def function_def(self, body: list, rename: dict[str, str]) -> NormalizedFunction:
        """The normalized function: `body` under the top function's (renamed) parameters, its
        defaults bound, every node tagged with its source."""
        state = self.state
        fdef = state.top.node
        params = [a.id for a in fdef.args.args]
        args = clone(fdef.args)
        args.kwonlyargs, args.kw_defaults = [], []     # (bound to their defaults in the body)
        for a in args.args:
            a.id = rename[a.id]
        defaults = list(getattr(state.top.fn, "__defaults__", None) or ())
        args.defaults = [constant(d) if isinstance(d, (int, float, str, tuple, type(None), bool))
                         else self.global_ref(f"default_{i}", d, fdef) for i, d in enumerate(defaults)]
        new = gast.FunctionDef(name=fdef.name, args=args, body=body, decorator_list=[],
                               returns=None, type_comment=None, type_params=[])
        copy_loc(new, fdef)
        for n in iter_nodes(new):
            if hasattr(n, "lineno") and not hasattr(n, "s2s_src"):
                n.s2s_src = state.top.source
        # the parameters as the body names them (a parameter named like a helper, `erf`, is renamed)
        return NormalizedFunction(new, state.ns, state.top.source, [rename[p] for p in params], sorted(state.deps),
                                  tuple(sorted(state.object_names)))


def normalize(parsed: ParsedFunction, keep_calls: frozenset = frozenset()) -> NormalizedFunction:
    """Normalize a parsed function; calls to `keep_calls` stay calls instead of being inlined.

    The passes, in order, and what each hands the next: the fence (nothing: it refuses what s2s does
    not read); the Normalizer (the body in ANF, the renames, and the state its parts filled in:
    normalize_state.py); the two checks of the result, which read that state (function values,
    sparse matrices: they may bind globals of the generated code); the function around the body."""
    fence(parsed)
    state = NormalizeState.start(parsed, keep_calls)
    normalizer = Normalizer(state)
    body, rename = normalizer.normalize_body()
    materialize_functions(body, state.functions, normalizer.global_ref, parsed.source)
    check_sparse_uses(body, state.ns, state.objects, parsed.source)
    return normalizer.function_def(body, rename)
