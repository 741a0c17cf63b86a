"""Split containers: a tuple, list, dict or record built in the function becomes one variable per
element.

`parts = [a, b]` binds `parts_0 = a; parts_1 = b` and records `aggregates["parts"] == ["parts_0",
"parts_1"]` (and in `agg_meta` the container's kind, keys and record class); nested containers
split recursively. Rebinding a container rebinds its elements (old values copied first, so
`t = (t[1], t[0])` swaps). An element read with a constant index, key, field or slice
(`parts[1]`, `d["w"]`, `params.w`, `parts[1:]`) reads the element variables. Inside the pass a
container value is a `container_literal`: a gast Tuple of atoms carrying `(kind, keys, record
class)` in `s2s_meta`; `emit_literal` writes it as real syntax (a tuple, a list, a dict literal or
`build_record(cls, ...)`) where a value is needed whole.

Invariant left for the next pass: no variable holds a tuple, list or dict the function builds;
such a container appears only as a literal of atoms where it is used whole (a call argument, tuple
arithmetic with a run-time tuple such as a shape, the returned value), so the transforms see each
element as its own variable.
"""
from __future__ import annotations

from typing import Any

import gast

from .. import runtime as rt
from ..errors import UnsupportedSyntaxError
from .ast_build import assign, const, name
from .nodes import names_in


class SplitContainers:
    """Container part of `Normalizer` (normalize.py). Fields of `self.state`
    (normalize_state.py) it uses: `aggregates`, `agg_meta`, `namer`, `constants`, `functions`,
    `holders`, `list_depth`, `dynamic_depth`, `row_lists`, `stale`; methods of the other parts:
    `arg_atom` (anf.py), `call_rule` (inlining.py), `error`."""

    def assign_aggregate(self, var: str, elts: list, out: list, s, meta: tuple = ("tuple", None, None)) -> None:
        """var = (e0, e1, ...): one variable per element (elements not yet normalized)."""
        atoms = [self.arg_atom(e, out) for e in elts]
        self.bind_value(var, container_literal(atoms, meta), out, s)

    def note_holder(self, value, holder: str, label: str) -> None:
        """`holder` is bound to the variable `value` names: one object in Python (an in-place update
        of it would show in the holder), a copy here (statements.py `holder_checks`)."""
        state = self.state
        if isinstance(value, gast.Name) and value.id not in state.aggregates and value.id not in state.functions \
                and value.id != holder:
            state.holders.setdefault(value.id, {})[holder] = label

    def drop_container(self, var: str, shown: str, s) -> None:
        """`var`, a split tuple/list/dict, now holds a single value (`logits = np.array(logits)`):
        fine where the statement runs once per run of the code that built the container; in a loop
        s2s keeps, the variable would hold a container on one step and a value on the next."""
        if self.state.list_depth.get(var, 0) < self.state.dynamic_depth:
            raise self.error(UnsupportedSyntaxError, f"`{shown}` holds a tuple/list before this loop and a single "
                             "value in it", s, "use different variable names for the tuple and the value")
        del self.state.aggregates[var]
        self.state.agg_meta.pop(var, None)

    def all_elements(self, var: str) -> set[str]:
        out = set()
        for e in self.state.aggregates.get(var, []):
            out.add(e)
            out |= self.all_elements(e)
        return out

    def bind_value(self, var: str, value, out: list, s) -> None:
        """Assign an already-normalized value (atom or tuple literal of atoms) to var."""
        state = self.state
        if isinstance(value, gast.Name) and value.id in state.functions:
            state.functions[var] = state.functions[value.id]      # a function value: nothing to compute
            return
        if isinstance(value, gast.Name) and value.id in state.aggregates and value.id != var:
            value = self.aggregate_or_name(value.id)
        state.functions.pop(var, None)
        state.row_lists.pop(var, None)
        source = getattr(value, "s2s_from", None)
        if source is not None and source in state.stale:
            raise self.error(UnsupportedSyntaxError, "this reads a list that was changed through another name "
                             "holding it (a default argument, a partial's argument, an alias), which s2s does "
                             "not follow", s, "pass the list explicitly where it is used, or copy it (`list(a)`)")
        if source is not None and source != var:
            self.join_list(var, source)        # the same list under two names (sequences.py)
        elif source is None:
            self.leave_list(var)
        if isinstance(value, gast.Constant):
            state.constants[var] = value.value
        elif isinstance(value, gast.Name) and value.id in state.constants and value.id != var:
            state.constants[var] = state.constants[value.id]
        else:
            state.constants.pop(var, None)
        if not isinstance(value, (gast.Tuple, gast.List)):
            if var in state.aggregates:
                self.drop_container(var, var, s)
            out.append(assign(var, value, s))
            return
        elems = state.aggregates.get(var)
        meta = getattr(value, "s2s_meta", None) or ("list" if isinstance(value, gast.List) else "tuple", None, None)
        if elems is None:
            base = var.rstrip("_")
            keys = meta[1]
            elems = [state.namer.fresh(f"{base}_{keys[i]}" if keys and str(keys[i]).isidentifier() else f"{base}_{i}")
                     for i in range(len(value.elts))]
            state.aggregates[var] = elems
            state.agg_meta[var] = meta
            state.list_depth[var] = state.dynamic_depth
        elif len(elems) != len(value.elts) and meta[0] == "list" and \
                state.list_depth.get(var, 0) >= state.dynamic_depth:
            # another list (`xs = xs + [x]`, `xs = []`): new element variables
            elems = [state.namer.fresh(f"{var.rstrip('_')}_{i}") for i in range(len(value.elts))]
            state.aggregates[var] = elems
            state.agg_meta[var] = meta
        elif len(elems) != len(value.elts):
            raise self.error(UnsupportedSyntaxError, "a variable holds tuples/lists of different lengths", s)
        # Copy old elements first so `t = (t[1], t[0])` reads the old values.
        own = self.all_elements(var)
        staged = []
        for v in value.elts:
            if isinstance(v, gast.Name) and v.id in own:
                tmp = state.namer.temp()
                out.append(assign(tmp, v, s))
                v = name(tmp)
            elif isinstance(v, (gast.Tuple, gast.List)) and names_in(v) & own:
                raise self.error(UnsupportedSyntaxError, "nested tuple refers to itself", s)
            staged.append(v)
        for e, v in zip(elems, staged):
            self.note_holder(v, e, f"an element of `{var.rstrip('_')}`")
            self.bind_value(e, v, out, s)

    def aggregate_or_name(self, var: str) -> Any:
        """A split container as a literal of its element variables (keeps its kind and keys)."""
        if var in self.state.aggregates:
            meta = self.state.agg_meta.get(var, ("tuple", None, None))
            literal = container_literal([self.aggregate_or_name(e) for e in self.state.aggregates[var]], meta)
            if meta[0] in ("list", "dict"):
                literal.s2s_from = var          # (mutable: binding it shares the list, sequences.py)
            return literal
        return name(var)

    def emit_literal(self, node) -> Any:
        """Container literals as real syntax: tuple, list, dict or a record constructor."""
        if not isinstance(node, (gast.Tuple, gast.List)):
            return node
        kind, keys, cls = getattr(node, "s2s_meta", None) or (
            "list" if isinstance(node, gast.List) else "tuple", None, None)
        elts = [self.emit_literal(e) for e in node.elts]
        if kind == "dict":
            return gast.Dict(keys=[const(k) for k in keys], values=elts)
        if kind == "record":
            call = self.call_rule(rt.build_record, [name(cls)], node, dict(zip(keys, elts)))
            return call
        return (gast.List if kind == "list" else gast.Tuple)(elts, gast.Load())

    def element_of(self, var: str, key, node) -> Any:
        """Element `key` (int index, dict key or record field) of a split container."""
        elems = self.state.aggregates[var]
        kind, keys, _ = self.state.agg_meta.get(var, ("tuple", None, None))
        if kind in ("dict", "record") and key in (keys or ()):
            i = keys.index(key)
        elif kind != "dict" and isinstance(key, int) and not isinstance(key, bool) and -len(elems) <= key < len(elems):
            i = key
        else:
            raise self.error(UnsupportedSyntaxError, f"no element {key!r} in this {kind}", node)
        e = elems[i]
        return self.aggregate_or_name(e) if e in self.state.aggregates else name(e)

    def slice_of(self, var: str, sl, node) -> Any:
        """`parts[1:]`, `pair[::-1]` of a split tuple/list: the literal of the elements picked."""
        kind = self.state.agg_meta.get(var, ("tuple", None, None))[0]
        if kind not in ("tuple", "list"):
            raise self.error(UnsupportedSyntaxError, f"s2s cannot slice a {kind}", node)

        def bound(b):
            if b is None:
                return None
            if isinstance(b, gast.Constant) and isinstance(b.value, int) and not isinstance(b.value, bool):
                return b.value
            if isinstance(b, gast.UnaryOp) and isinstance(b.op, gast.USub) and isinstance(b.operand, gast.Constant):
                return -b.operand.value
            raise self.error(UnsupportedSyntaxError, "s2s slices a tuple or list with constant bounds only", node,
                             "slice an array instead (np.stack the values first)")
        picked = self.state.aggregates[var][slice(bound(sl.lower), bound(sl.upper), bound(sl.step))]
        return container_literal([self.aggregate_or_name(e) for e in picked], (kind, None, None))


def container_literal(elts: list, meta: tuple) -> gast.Tuple:
    """The internal form of a container literal: a Tuple carrying its kind and keys."""
    node = gast.Tuple(list(elts), gast.Load())
    node.s2s_meta = meta
    return node


def container_kind(node) -> str | None:
    """"tuple", "list", "dict" or "record" for a container literal, None for anything else."""
    if not isinstance(node, (gast.Tuple, gast.List)):
        return None
    meta = getattr(node, "s2s_meta", None)
    return meta[0] if meta else ("list" if isinstance(node, gast.List) else "tuple")
