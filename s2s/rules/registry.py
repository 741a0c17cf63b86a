"""One typed table: operation -> everything each pass needs to know about it.

An `OpRule` holds, side by side, the reverse-mode adjoint, the forward-mode
tangent, the batching rule and the Numba lowering of one operation.  Passes
look rules up by the *object* a call resolves to (``numpy.sin``), never by
spelling, so ``from numpy import sin`` and ``np.sin`` mean the same op.
"""
from __future__ import annotations

import dataclasses
import sys
import types
from typing import Any, Callable

import gast

from .template import Template


@dataclasses.dataclass
class OpRule:
    """Everything s2s knows about one operation.

    Attributes:
        fn: the Python object calls resolve to.
        name: its canonical spelling in generated source ("np.sin").
        adjoint: reverse-mode rule (a `Template` written with d[x] notation).
        tangent: forward-mode rule (a `Template` written with t[x] notation).
        batch: vmap's batching kind (rules/batch_rules.py lists them: "elementwise", "reduce",
            "axis_args", ...); None: the op runs in a per-example loop (slower, never wrong).
        axis_params: parameters naming axes of the first argument, which vmap shifts past the
            batch axis (batch kind "axis_args").
        methods: ndarray method names that mean this op with the array first (`x.sum(1)` is
            `np.sum(x, 1)`); they do not write into their array.
        reduction: the Numba backend's own reduction kernel for calls with axis/keepdims
            ("sum" -> reduce_sum in s2s/ops/reductions/numba_kernels.py); also the ops whose full
            reduction the specializer knows is a number.
        vector_kernel: a vectorizable float64 kernel the Numba backend calls on arrays instead
            (np.exp -> rt.fast_exp, s2s/ops/elementwise/numba_vecmath.py).
        cuda_math: the `math` function CUDA device code calls for it on numbers (np.arctan -> "atan").
        numba_call: call node (or the op's operator form, a BinOp) -> the form Numba compiles
            (np.reshape(x, s) -> np.ascontiguousarray(x).reshape(s); `a @ b` -> np.matmul(a, b)),
            or None to keep it; set by the family's numba*.py (the backend fills it from above).
        batch_rule: call node (first argument batched) -> what vmap computes in its place, for kinds
            whose form differs per op (np.shape's per-example shape); set by the family's batching.py.
        call_form: (call node, normalizer) -> the call in the one form its rule reads, applied by
            normalization before the rule (np.einsum: sublists and 4+ operands become a subscripts
            string and at most three operands; s2s/ops/linalg/einsum_forms.py).
        cuda_scalar: call node -> the expression CUDA device code computes on numbers
            (np.maximum -> `max(a, b)`); set by the family's numba_cuda.py.
        view: its result may be a view of its first argument (np.reshape): writes into one can
            reach the other (analysis/aliasing.py).
        attributes: ndarray attributes that mean this op of the array (`x.T` is np.transpose(x)).
        result_fields: the field names of the namedtuple it returns (np.linalg.slogdet: "sign",
            "logabsdet"), so `slogdet(a).logabsdet` reads the tuple's element.
        operator: the Python operator that means it, as its AST class name ("Add": `a + b` is
            np.add; "USub": `-a` is np.negative), so operators share their ufunc's rules.
        fusable: the Numba backend's fused loops may compute it one element at a time (an
            elementwise op; np.clip is not: Numba's takes arrays only).
        flat_index: with axis=None it returns an index into the flattened array (np.argmax).
        returns_int: on numbers it returns a Python int (math.floor, math.ceil, math.trunc).
        stacks_rows: of a list of arrays (axis 0), it stacks them as the rows of one array
            (np.stack, np.array, np.asarray): a list grown in a loop is its rows already.
        ragged_tuple: it returns a tuple of arrays of different shapes (np.linalg.eigh, qr, svd,
            np.array_split): vmap cannot stack one op's results, so the function runs per example.
        nondiff: the output carries no derivative (comparisons, shapes, ...).
        bindings: globals generated code needs to call it (user rules: the function itself).
        fresh: the op always returns a newly allocated array, so writes into
            its result cannot alias anything the user can see.
        defined_in: the module that registered the rule (for s2s's ops, its family's rules.py).
        refused: why s2s does not differentiate it (its arguments can carry a derivative,
            but there is no rule): a value that carries one is refused with this reason.
    """
    fn: Any
    name: str
    adjoint: Template | None = None
    tangent: Template | None = None
    batch: str | None = None
    axis_params: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    reduction: str | None = None
    vector_kernel: str | None = None
    cuda_math: str | None = None
    view: bool = False
    fusable: bool = True
    stacks_rows: bool = False
    flat_index: bool = False
    returns_int: bool = False
    numba_call: Callable | None = None
    batch_rule: Callable | None = None
    cuda_scalar: Callable | None = None
    call_form: Callable | None = None
    ragged_tuple: bool = False
    operator: str | None = None
    attributes: tuple[str, ...] = ()
    result_fields: tuple[str, ...] = ()
    nondiff: bool = False
    fresh: bool = False
    refused: str | None = None
    bindings: dict[str, Any] = dataclasses.field(default_factory=dict)  # globals its name/templates need
    defined_in: str = ""        # the module that registered it: s2s.ops.<family>.rules for s2s's own


Key = int | tuple[int, int]      # see _key

RULES: dict[Key, OpRule] = {}
_KEEPALIVE: list[Any] = []
_CHANGES = 0                    # registrations so far (user rules can be registered at any time)
_USER_FINGERPRINT: tuple[int, str] | None = None
_TABLES_LOADED = False          # set once s2s's own tables are registered (see tables_loaded)
_USER_KEYS: dict[Key, None] = {}    # ops registered after that, in order: users' and third parties'


def tables_loaded() -> None:
    global _TABLES_LOADED
    _TABLES_LOADED = True


_MethodType = types.MethodType


def _key(fn: Any) -> Key:
    """An op's key: the identity of the object a call resolves to.  A bound method is keyed by its
    object and its function: every read of `scipy.stats.norm.logpdf` makes a new method object
    (equal, not identical), while the pair stays the same (s2s/ops/stats/rules.py's ops are such)."""
    if type(fn) is _MethodType:
        return (id(fn.__self__), id(fn.__func__))
    return id(fn)


def register(fn: Any, name: str, **fields) -> OpRule:
    """Register (or extend) the rule of `fn`, spelled `name` in generated code."""
    global _CHANGES
    _CHANGES += 1
    if _TABLES_LOADED:
        _USER_KEYS[_key(fn)] = None
        COMPOSITES.pop(_key(fn), None)      # (a user's rule stands over s2s's definition of the op)
    rule = RULES.get(_key(fn))
    if rule is None:
        rule = OpRule(fn=fn, name=name, defined_in=_registering_module())
        RULES[_key(fn)] = rule
        _KEEPALIVE.append(fn)
    for k, v in fields.items():
        setattr(rule, k, v)
    return rule


def _registering_module() -> str:
    """The module whose code registered the rule (the first frame outside this module)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return frame.f_globals.get("__name__", "?") if frame is not None else "?"


# Families of a library that is slow to import register when the user's code has imported it:
# scipy.special and scipy.stats (their import is 0.35 s, a third of `import s2s`, paid by every
# program that never calls them).  A lookup that misses while the library is in sys.modules loads
# them, and calling one of their functions means the user's module imported it.
_LAZY_FAMILIES: dict[str, Callable[[], None]] = {}     # module that must be imported -> its loader


def defer_family(module: str, load: Callable[[], None]) -> None:
    """Run `load` (which imports a family's rules.py) once `module` has been imported by anyone."""
    _LAZY_FAMILIES[module] = load


def load_lazy_families(everything: bool = False) -> bool:
    """Load the deferred families whose library is imported (every one with `everything`: the
    views of the whole table, docs/ops.md and its tests); True if any loaded."""
    global _TABLES_LOADED
    loaded_any = False
    for module in list(_LAZY_FAMILIES):
        if everything or module in sys.modules:
            load = _LAZY_FAMILIES.pop(module, None)
            if load is None:
                continue
            was, _TABLES_LOADED = _TABLES_LOADED, False      # (s2s's own tables, not user rules)
            try:
                load()
            finally:
                _TABLES_LOADED = was
            loaded_any = True
    return loaded_any


def all_rules() -> list[OpRule]:
    """Every rule of the table, the deferred families loaded first."""
    load_lazy_families(everything=True)
    return list(RULES.values())


def _rule(key: Key) -> OpRule | None:
    rule = RULES.get(key)
    if rule is None and _LAZY_FAMILIES and load_lazy_families():
        rule = RULES.get(key)
    return rule


def lookup(fn: Any) -> OpRule | None:
    return _rule(_key(fn))


# the record of an op without a rule: every fact at its default (read it, never write it)
_NO_RULE = OpRule(fn=None, name="")


def record_of(fn: Any) -> OpRule:
    """`fn`'s record, or for anything without a rule one with every field at its default (no
    batching kind, no view, no Numba rewrite, ...): for passes that read one fact of a call."""
    return _rule(_key(fn)) or _NO_RULE


def registered_later(fn: Any) -> bool:
    """The op was registered after s2s's own tables loaded (a user's rule, a pmap built at run time)."""
    return _key(fn) in _USER_KEYS


# ndarray method and attribute names -> the op each means (OpRule.methods, .attributes)
_METHOD_OPS: dict[str, Any] = {}
_ATTRIBUTE_OPS: dict[str, Any] = {}


def declare(*fns: Any, **fields) -> None:
    """Set more of the facts of ops that have a rule already: their batching kind, axis
    parameters, method names, Numba kernels (the OpRule attributes of those names)."""
    for fn in fns:
        rule = lookup(fn)
        if rule is None:
            raise KeyError(f"declare: {fn!r} has no rule to add {sorted(fields)} to")
        for k, v in fields.items():
            if not hasattr(rule, k) or k in ("fn", "name"):
                raise TypeError(f"declare: OpRule has no settable field {k!r}")
            setattr(rule, k, v)
        for method in fields.get("methods", ()):
            _METHOD_OPS[method] = fn
        for attribute in fields.get("attributes", ()):
            _ATTRIBUTE_OPS[attribute] = fn


def operator_ops(kind: type) -> dict[type, Any]:
    """The AST operator classes of `kind` (gast.operator: `a + b`; gast.unaryop: `-a`) -> the op
    each means (OpRule.operator): {gast.Add: np.add, ...}."""
    ops = {getattr(gast, rule.operator): rule.fn for rule in RULES.values() if rule.operator}
    return {cls: fn for cls, fn in ops.items() if issubclass(cls, kind)}


def method_op(method: str) -> Any:
    """The op an ndarray method of this name means (`x.sum` -> np.sum), or None."""
    return _METHOD_OPS.get(method)


def attribute_op(attribute: str) -> Any:
    """The op an ndarray attribute of this name means (`x.T` -> np.transpose), or None."""
    return _ATTRIBUTE_OPS.get(attribute)


def adjoint(fn: Any, name: str | None = None, *, broadcasts: bool = False, shape_only: tuple = ()):
    """Decorator: register a d[x]-notation template as fn's reverse-mode rule.

    `shape_only` names parameters used only for their shape (no derivative).
    """
    def wrap(template_fn):
        rule = lookup(fn)
        register(fn, name or (rule.name if rule else template_fn.__name__),
                 adjoint=Template(template_fn, kind="d", broadcasts=broadcasts, shape_only=shape_only))
        return template_fn
    return wrap


def tangent(fn: Any, name: str | None = None, *, broadcasts: bool = False, shape_only: tuple = ()):
    """Decorator: register a t[x]-notation template as fn's forward-mode rule."""
    def wrap(template_fn):
        rule = lookup(fn)
        register(fn, name or (rule.name if rule else template_fn.__name__),
                 tangent=Template(template_fn, kind="t", broadcasts=broadcasts, shape_only=shape_only))
        return template_fn
    return wrap


def nondiff(fn: Any, name: str, *, fresh: bool = False) -> OpRule:
    """Register an op whose output has no derivative (zero gradient, not an error)."""
    return register(fn, name, nondiff=True, fresh=fresh)


_USER_MODULES = ("numpy", "scipy", "builtins", "math", "operator", "_operator")


def user_facing(fn: Any) -> bool:
    """An op users call (NumPy, scipy, math, operator, builtins), not one of s2s's own helpers."""
    import numpy as np
    return isinstance(fn, np.ufunc) or (getattr(fn, "__module__", None) or "").split(".")[0] in _USER_MODULES


def builtin_rule(rule: OpRule) -> bool:
    """A rule of s2s's own tables (not one a user or a test registered with s2s.adjoint & co.)."""
    tmpl = rule.adjoint or rule.tangent
    return tmpl is None or getattr(tmpl.fn, "__module__", "").startswith("s2s.")


def refuse(fn: Any, name: str, why: str, *, fresh: bool = False) -> OpRule:
    """Register an op whose float arguments can carry a derivative s2s does not give: fine on
    constants, a clear error (with `why`) when a differentiated value flows in; never a zero."""
    return register(fn, name, refused=why, fresh=fresh)


# Ops defined by other ops (s2s/ops/composite/rules.py): fn -> a Python definition normalization
# inlines in place of the call, so the ops it uses give every rule.
COMPOSITES: dict[Key, Any] = {}


def register_composite(fn: Any, definition: Callable) -> None:
    global _CHANGES
    _CHANGES += 1
    if _TABLES_LOADED:
        _USER_KEYS[_key(fn)] = None
    elif _key(fn) in _USER_KEYS:
        return          # (a family loaded late: the rule a user registered for the op stands)
    COMPOSITES[_key(fn)] = definition
    _KEEPALIVE.append(fn)


def composite_of(fn: Any) -> Callable | None:
    if _LAZY_FAMILIES and _key(fn) not in COMPOSITES:
        load_lazy_families()
    if type(fn) is _MethodType:
        return _method_composite(fn)
    return COMPOSITES.get(id(fn))


# Composites of a library that is slow to import register when a call first needs them: the module
# (prefix) of the methods' objects -> the function that registers them.  s2s/ops/stats/rules.py's
# distributions are such (scipy.stats takes 0.4 s to import, as long as s2s itself); calling one of
# their methods means the user's code has imported it already.
_DEFERRED: dict[str, Callable[[], None]] = {}


def defer_composites(prefix: str, install: Callable[[], None]) -> None:
    """Run `install` (which calls register_composite) when a method of an object defined in the
    module `prefix` (or one below it) is first looked up, or at load_deferred()."""
    _DEFERRED[prefix] = install


def load_deferred() -> None:
    """Register every deferred family now (they count as s2s's own tables, not user rules)."""
    global _TABLES_LOADED
    while _DEFERRED:
        install = _DEFERRED.pop(next(iter(_DEFERRED)))
        loaded, _TABLES_LOADED = _TABLES_LOADED, False
        try:
            install()
        finally:
            _TABLES_LOADED = loaded


def _method_composite(fn: Any) -> Callable | None:
    key = (id(fn.__self__), id(fn.__func__))
    if key not in COMPOSITES and _DEFERRED:
        module = getattr(type(fn.__self__), "__module__", None) or ""
        if any(module == p or module.startswith(p + ".") for p in _DEFERRED):
            load_deferred()
    return COMPOSITES.get(key)


def user_rules_fingerprint() -> str:
    """A digest of the rules registered outside s2s (templates, composites, refusals by users or
    third-party packages): generated code inlines their templates, so the disk cache keys on them
    (an edited `@s2s.adjoint` template module is another derivative)."""
    global _USER_FINGERPRINT
    if _USER_FINGERPRINT is not None and _USER_FINGERPRINT[0] == _CHANGES:
        return _USER_FINGERPRINT[1]
    import hashlib
    from ..frontend.reads import code_fingerprint
    h = hashlib.sha256()
    for key in _USER_KEYS:
        rule, definition = RULES.get(key), COMPOSITES.get(key)
        if rule is not None:
            h.update(repr((rule.name, rule.nondiff, rule.fresh, rule.refused, sorted(rule.bindings))).encode())
            for tmpl in (rule.adjoint, rule.tangent):
                code = getattr(getattr(tmpl, "fn", None), "__code__", None)
                h.update(code_fingerprint(code).encode() if code is not None else b"-")
        if definition is not None and hasattr(definition, "__code__"):
            h.update(code_fingerprint(definition.__code__).encode())
    _USER_FINGERPRINT = (_CHANGES, h.hexdigest()[:16])
    return _USER_FINGERPRINT[1]


# Generated code, rule templates and s2s's helpers call NumPy and math by name (`np.sin`): a name
# rebound since (`np.sin = np.cos`, a logging wrapper) would make them compute with the replacement
# while the user's call was differentiated as the op it resolved to.  (name, module, attributes, op)
# of each of s2s's own rules spelled through a module, taken from the first check on.
_SPELLINGS: list | None = None


def replaced_spellings() -> list[tuple[str, Any, Any]]:
    """(spelling, what it names now, the op s2s's rules mean by it) for each NumPy/math function
    of the rule table that no longer names its op: the module attribute was rebound."""
    global _SPELLINGS
    import math
    import numpy as np
    roots = {"np": np, "math": math}
    if _SPELLINGS is None:
        spellings = []
        for rule in list(RULES.values()):
            parts = rule.name.split(".")
            if parts[0] in roots and len(parts) > 1 and builtin_rule(rule) and type(rule.fn) is not _MethodType \
                    and (_resolve(roots[parts[0]], parts[1:]) is rule.fn
                         or getattr(rule.fn, "__name__", None) == parts[-1]):   # (rebound before this)
                spellings.append((rule.name, roots[parts[0]], tuple(parts[1:]), rule.fn))
        _SPELLINGS = spellings
    out = []
    for spelling, root, attrs, fn in _SPELLINGS:
        obj = _resolve(root, attrs)
        if obj is not fn:
            out.append((spelling, obj, fn))
    return out


def _resolve(obj: Any, attrs) -> Any:
    for a in attrs:
        obj = getattr(obj, a, None)
    return obj
