"""Random NumPy programs for differential testing (tests/reverse/test_random_programs.py).

`programs()` is a Hypothesis strategy of `Program`s: the source text of a module holding
zero to two helper functions and `f(x, y)`, plus the arguments to call it with. Every
program is valid NumPy whose values stay bounded (exp only of tanh, division only by
1 + z*z, log and sqrt only of 1 + z*z, squashing functions on loop-carried values), and
returns a scalar. Constructs:

- expressions with broadcasting: + - * unary -, a / (1.0 + b * b), ** 2, np.sin, np.cos,
  np.tanh, np.exp(np.tanh(.)), np.log(1.0 + z * z), np.sqrt(1.0 + z * z), np.sum, np.mean,
  np.dot, np.maximum / np.minimum with a constant, np.where(z > c, a, b), indexing v[c],
  v[i] with a loop index, v[-1], slices v[1:], v[:-1], v[::-1], constants, np.linspace;
- assignments to new and existing variables (the arguments included), augmented
  assignments (+=, -=, *=);
- `for i in range(k)` / `range(1, k)` (loop-carried and overwritten variables), nested loops;
- `if`/`else` on data or on the loop index, variables assigned in both branches;
- `while <data> < c and k < m:` with a counter (bounded trip count);
- `break` / `continue` (guarded by data or index conditions), early `return`;
- indexed writes `out[i] = ...`, `out[i] += ...`, recurrences `out[i] = 0.5 * out[i - 1] + ...`
  into arrays made in the function (`np.zeros(n)`, `np.ones(n)`);
- calls to helpers defined in the same module (a helper may call the previous one), in
  statements and inside expressions;
- gathers with integer-array indices that repeat (`v[np.array([1, 0, 1, -2])]`), draws of a
  seeded Generator (`np.random.default_rng(3).normal(0.0, 0.5, n)`), a parameter left at its
  default (`def f(x, y, scale=0.7)`), and `f_tree(p)`, f of a dict of its arguments.

Kinds: 0 is a scalar, L > 0 a float vector of length L. A program's vectors have length
`n` (or n - 1 after a slice).
"""
from __future__ import annotations

import itertools
import re
import zlib
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

CONSTS = ("0.5", "0.3", "-0.4", "0.7", "-0.9", "1.2", "-0.2", "1.5", "0.1", "-1.1")
THRESH = ("0.0", "0.25", "-0.35", "0.6", "-0.8", "1.0")
SCALAR_TYPES = ("float", "np.float64", "0d")
_VIEW = re.compile(r"^(\w+)(\[(1:|:-1|::-1)\])?$|^(h\d+)\(")


@dataclass
class Program:
    source: str
    x_kind: int
    y_kind: int
    n: int
    seed: int
    x_type: str
    y_type: str
    features: set = field(default_factory=set)

    def args(self, seed_offset=0):
        """(x, y) as the program's argument types, values in [-1.5, 1.5]."""
        rng = np.random.default_rng(self.seed + seed_offset)
        return (_value(rng, self.x_kind, self.x_type), _value(rng, self.y_kind, self.y_type))

    def x_batch(self, batch):
        """A batch of `batch` x values (leading axis), for vmap(f, in_axes=(0, None))."""
        rng = np.random.default_rng(self.seed + 7919)
        xs = rng.uniform(-1.5, 1.5, (batch,) + ((self.x_kind,) if self.x_kind else ()))
        return xs.astype(np.float32) if self.x_type == "float32" else xs

    @property
    def digest(self) -> int:
        return zlib.crc32(self.source.encode())

    def reproducer(self, args=None) -> str:
        """The program and its call, as text to paste into a regression test."""
        args = self.args() if args is None else args
        return (f"{self.source}\n# arguments:\n"
                f"x = {arg_repr(args[0])}\ny = {arg_repr(args[1])}\n")


def _value(rng, kind, typ):
    if kind:
        v = rng.uniform(-1.5, 1.5, kind)
        return v.astype(np.float32) if typ == "float32" else v
    v = float(rng.uniform(-1.5, 1.5))
    if typ == "np.float64":
        return np.float64(v)
    if typ == "0d":
        return np.array(v)
    return v


def arg_repr(a) -> str:
    if isinstance(a, np.ndarray):
        if a.ndim == 0:
            return f"np.array({float(a)!r})"
        return "np.array([" + ", ".join(repr(float(v)) for v in a.ravel()) + "]" + (
            ", dtype=np.float32" if a.dtype == np.float32 else "") + ")" + (
            "" if a.ndim == 1 else f".reshape({a.shape})")
    if isinstance(a, np.float64):
        return f"np.float64({float(a)!r})"
    return repr(a)


class _Scope:
    """What a statement may read: variables (name -> kind), loop indices (name -> bound)."""

    def __init__(self, vars, loops=None, frozen=()):
        self.vars = dict(vars)
        self.loops = dict(loops or {})     # index name -> exclusive upper bound (None: no indexing)
        self.frozen = set(frozen)          # readable, never assigned (counters)

    def child(self):
        return _Scope(self.vars, self.loops, self.frozen)


class _Gen:
    def __init__(self, draw, n, avoid=frozenset()):
        self.avoid = avoid
        self.draw = draw
        self.n = n
        self.count = itertools.count()
        self.helpers: list = []     # (name, (kind_a, kind_b), return kind)
        self.features: set = set()
        self.aliases: set = set()
        self.augmented: set = set()
        self.written: set = set()      # arrays with indexed writes
        self.in_f = False
        self.reassigned: dict = {}     # argument of f -> how often it is reassigned (2 in a loop)

    # ----- choices (Hypothesis shrinks towards the first option) -----
    def pick(self, seq):
        seq = list(seq)
        return seq[self.draw(st.integers(0, len(seq) - 1))]

    def chance(self, percent):
        return self.draw(st.integers(0, 99)) < percent

    def weighted(self, options):
        """options: list of (weight, value); picks one."""
        total = sum(w for w, _ in options)
        r = self.draw(st.integers(0, total - 1))
        for w, v in options:
            if r < w:
                return v
            r -= w
        return options[-1][1]

    def fresh(self, prefix="v"):
        return f"{prefix}{next(self.count)}"

    # ----- expressions -----
    def lengths(self, sc):
        return sorted({self.n} | {k for k in sc.vars.values() if k})

    def leaf(self, sc, kind):
        opts = []
        same = [v for v, k in sc.vars.items() if k == kind]
        for v in same:
            opts.append((6, v))
        if kind == 0:
            opts.append((2, self.pick(CONSTS)))
            for v, k in sc.vars.items():
                if k:
                    opts.append((1, f"{v}[{self.pick(range(k))}]"))
                    opts.append((1, f"{v}[-1]"))
                    for i, bound in sc.loops.items():
                        if bound is not None and bound <= k:
                            opts.append((2, f"{v}[{i}]"))
            for i in sc.loops:
                opts.append((1, f"(0.1 * {i})"))
        else:
            opts.append((1, f"np.linspace({self.pick(CONSTS)}, {self.pick(CONSTS)}, {kind})"))
            if "random-draw" not in self.avoid and self.chance(20):
                # a seeded Generator's draw: a constant of the derivative, the same under jit
                opts.append((1, f"np.random.default_rng({self.pick(range(5))}).normal(0.0, 0.5, {kind})"))
            for v, k in sc.vars.items():
                if v in self.written and "view-of-written-array" in self.avoid:
                    continue
                if k == kind:
                    opts.append((1, f"{v}[::-1]"))
                if k == kind + 1:
                    opts.append((2, f"{v}[1:]"))
                    opts.append((1, f"{v}[:-1]"))
        choice = self.weighted(opts)
        if "default_rng" in choice:
            self.features.add("random draw")
        elif "[" in choice:
            self.features.add("index/slice")
        return choice

    def expr(self, sc, kind, depth):
        if depth <= 0 or self.chance(25):
            return self.leaf(sc, kind)
        d = depth - 1
        opts = [(5, "bin"), (4, "unary"), (1, "div"), (1, "where"), (1, "maxmin"), (1, "neg")]
        if kind == 0:
            opts += [(3, "reduce"), (1, "dot")]
            if "fancy-index" not in self.avoid:
                opts.append((1, "gather"))
        if self.helpers:
            opts.append((1, "call"))
        what = self.weighted(opts)
        if what == "bin":
            ka, kb = self.pick([(kind, kind), (kind, 0), (0, kind)]) if kind else (0, 0)
            op = self.pick(["+", "*", "-"])
            return f"({self.expr(sc, ka, d)} {op} {self.expr(sc, kb, d)})"
        if what == "neg":
            return f"(-{self.expr(sc, kind, d)})"
        if what == "unary":
            a = self.expr(sc, kind, d)
            form = self.pick(["np.sin({})", "np.tanh({})", "np.cos({})", "({} ** 2)", "np.exp(np.tanh({}))",
                              "np.log(1.0 + {0} * {0})", "np.sqrt(1.0 + {0} * {0})"])
            self.features.add(form.split("(")[0] if form[0] != "(" else "**2")
            return form.format(a)
        if what == "div":
            ka, kb = self.pick([(kind, kind), (kind, 0), (0, kind)]) if kind else (0, 0)
            b = self.expr(sc, kb, d)
            self.features.add("div")
            return f"({self.expr(sc, ka, d)} / (1.0 + {b} * {b}))"
        if what == "where":
            kc = self.pick([kind, 0]) if kind else 0
            ka, kb = self.pick([(kind, kind), (kind, 0), (0, kind)]) if kind else (0, 0)
            self.features.add("np.where")
            return (f"np.where({self.expr(sc, kc, d)} > {self.pick(THRESH)}, "
                    f"{self.expr(sc, ka, d)}, {self.expr(sc, kb, d)})")
        if what == "maxmin":
            fn = self.pick(["np.maximum", "np.minimum"])
            self.features.add("np.maximum/minimum")
            return f"{fn}({self.expr(sc, kind, d)}, {self.pick(THRESH)})"
        if what == "reduce":
            L = self.pick(self.lengths(sc))
            fn = self.pick(["np.sum", "np.mean"])
            self.features.add(fn)
            return f"{fn}({self.expr(sc, L, d)})"
        if what == "gather":
            # an integer-array index with a repeat (and a negative index): its cotangent
            # accumulates as np.add.at does
            L = self.pick(self.lengths(sc))
            idx = [self.pick(range(L)) for _ in range(self.pick([2, 3, 4]))]
            idx.append(idx[0] - L)
            weights = ", ".join(self.pick(CONSTS) for _ in idx)
            self.features.add("fancy index")
            return f"np.sum({self.expr(sc, L, d)}[np.array({idx})] * np.array([{weights}]))"
        if what == "dot":
            L = self.pick(self.lengths(sc))
            self.features.add("np.dot")
            return f"np.dot({self.expr(sc, L, d)}, {self.expr(sc, L, d)})"
        if what == "call":
            call, rk = self.call(sc, d)
            if rk == kind:
                return call
            if kind == 0:
                return f"np.sum({call})"
            return f"({call} * np.ones({kind}))" if rk == 0 else self.leaf(sc, kind)
        raise AssertionError(what)

    def call(self, sc, depth):
        name, (ka, kb), rk = self.pick(self.helpers)
        self.features.add("helper call")
        return f"{name}({self.expr(sc, ka, min(depth, 1))}, {self.expr(sc, kb, min(depth, 1))})", rk

    def cond(self, sc, depth=1):
        opts = [(3, "sum"), (3, "scalar")]
        if sc.loops:
            opts.append((2, "index"))
        what = self.weighted(opts)
        if what == "index":
            i = self.pick(sorted(sc.loops))
            return f"{i} {self.pick(['==', '>', '<'])} {self.pick(range(1, 4))}"
        if what == "sum":
            L = self.pick(self.lengths(sc))
            return f"np.sum({self.expr(sc, L, depth)}) > {self.pick(THRESH)}"
        return f"{self.expr(sc, 0, depth)} {self.pick(['>', '<'])} {self.pick(THRESH)}"

    # ----- statements -----
    def targets(self, sc, kind=None):
        return [v for v, k in sc.vars.items() if v not in sc.frozen and (kind is None or k == kind)
                and not (v in self.written and "rebind-written-array" in self.avoid)]

    def assign(self, sc, out, ind, in_loop, new_ok=True):
        existing = self.targets(sc)
        if existing and (not new_ok or self.chance(55)):
            name = self.pick(existing)
            kind = sc.vars[name]
            if name in ("x", "y"):
                self.features.add("argument reassigned")
                if self.in_f:
                    self.features.add(f"{name} reassigned")
                    self.reassigned[name] = self.reassigned.get(name, 0) + (2 if in_loop else 1)
                    if self.reassigned[name] >= 2:
                        self.features.add("argument reassigned twice or in a loop")
        else:
            name, kind = self.fresh(), self.pick([self.n, 0] + [k for k in self.lengths(sc) if k != self.n])
        if self.helpers and self.chance(15):
            call, rk = self.call(sc, 2)
            if rk == kind:
                rhs = call
            elif kind == 0:
                rhs = f"np.sum({call})"
            else:
                rhs = f"({call} + {self.expr(sc, kind, 1)})"
        else:
            rhs = self.expr(sc, kind, self.pick([2, 3, 1]))
        if rhs == name and self.chance(70):     # common from the leaves; keep some
            rhs = self.expr(sc, kind, 2)
        if rhs == name and "self-assignment" in self.avoid:
            rhs = f"(1.0 * {rhs})"
        if rhs == name:
            self.features.add("self-assignment")
        if in_loop and self.chance(60):
            rhs = self.pick(["np.tanh({})", "np.sin({})", "0.5 * np.cos({})", "({} / (1.0 + {} * {}))"]).format(
                rhs, rhs, rhs)
        if (rhs.startswith("np.sum(") and re.search(rf"\b{name}\b", rhs)
                and "jit-fused-sum-into-operand" in self.avoid):
            rhs = f"(1.0 * {rhs})"
        # A bare name, a slice or a helper's result may be the same object as another variable
        # (an argument, say); augmented assignment is in place on arrays (0-d ones included),
        # so it is only generated for variables that never hold such a value.
        m = _VIEW.match(rhs)
        base = m.group(1) if m else None
        if m and (name in self.augmented or base in self.augmented or (base is None and any(
                v in self.augmented for v in re.findall(r"[A-Za-z_]\w*", rhs)))):
            rhs, m = f"(1.0 * {rhs})", None
        if m:
            self.aliases.add(name)
            self.aliases.update(re.findall(r"[A-Za-z_]\w*", rhs))   # whatever the value may be
        if (name in sc.vars and name not in self.aliases and name not in ("x", "y", "a", "b")
                and self.chance(35)):
            op = self.pick(["+=", "-=", "*="])
            self.features.add("augmented assignment")
            self.augmented.add(name)
            if op == "*=":
                rhs = f"np.tanh({rhs})"
            out.append(f"{ind}{name} {op} {rhs}")
        else:
            out.append(f"{ind}{name} = {rhs}")
        sc.vars[name] = kind
        return name

    def block(self, sc, out, ind, budget, loop_depth, in_loop, ret_kind):
        """Append up to `budget` statements; returns how many were used."""
        used = 0
        count = self.pick(range(1, max(1, budget) + 1))
        for _ in range(count):
            if used >= budget:
                break
            opts = [(6, "assign")]
            if loop_depth < 2 and budget - used >= 2:
                opts += [(3, "for"), (1, "while")]
            if budget - used >= 2:
                opts += [(2, "if"), (1, "fill")]
            if in_loop:
                opts += [(1, "break"), (1, "continue")]
            if ret_kind is not None and budget - used >= 2:
                opts.append((1, "return"))
            what = self.weighted(opts)
            used += 1
            if what == "assign":
                self.assign(sc, out, ind, in_loop)
            elif what == "for":
                i = self.fresh("i")
                k = self.pick(range(1, self.n + 1))
                start = self.pick([0, 0, 1]) if k > 1 else 0
                rng = f"range({k})" if start == 0 else f"range(1, {k})"
                out.append(f"{ind}for {i} in {rng}:")
                inner = sc.child()
                inner.loops[i] = k
                inner.frozen.add(i)
                self.features.add("nested for" if loop_depth else "for")
                used += self.block(inner, out, ind + "    ", budget - used, loop_depth + 1, True, ret_kind)
                self._merge_kinds(sc, inner)
            elif what == "while":
                c = self.fresh("k")
                m = self.pick(range(1, 6))
                out.append(f"{ind}{c} = 0")
                out.append(f"{ind}while {self.expr(sc, 0, 1)} < {self.pick(THRESH)} and {c} < {m}:")
                out.append(f"{ind}    {c} = {c} + 1")
                inner = sc.child()
                inner.loops[c] = None
                inner.frozen.add(c)
                self.features.add("while")
                if self.targets(sc):    # the data the condition reads changes in the loop
                    self.assign(inner, out, ind + "    ", True, new_ok=False)
                used += self.block(inner, out, ind + "    ", budget - used, loop_depth + 1, True, ret_kind)
                self._merge_kinds(sc, inner)
            elif what == "if":
                out.append(f"{ind}if {self.cond(sc)}:")
                a = sc.child()
                used += self.block(a, out, ind + "    ", max(1, (budget - used) // 2), loop_depth, in_loop, ret_kind)
                both = None
                if self.chance(30):
                    both = (self.fresh(), self.pick([0, self.n]))
                    out.append(f"{ind}    {both[0]} = {self.expr(a, both[1], 2)}")
                b = None
                if both or self.chance(60):
                    out.append(f"{ind}else:")
                    b = sc.child()
                    used += self.block(b, out, ind + "    ", max(1, (budget - used) // 2), loop_depth, in_loop,
                                       ret_kind)
                    if both:
                        out.append(f"{ind}    {both[0]} = {self.expr(b, both[1], 2)}")
                self.features.add("if/else" if b is not None else "if")
                self._merge_kinds(sc, a)
                if b is not None:
                    self._merge_kinds(sc, b)
                if both:
                    sc.vars[both[0]] = both[1]
                    self.features.add("assigned in both branches")
            elif what == "fill":
                self.fill(sc, out, ind)
            elif what in ("break", "continue"):
                out.append(f"{ind}if {self.cond(sc)}:")
                out.append(f"{ind}    {what}")
                self.features.add(what)
            elif what == "return":
                out.append(f"{ind}if {self.cond(sc)}:")
                value = self.expr(sc, ret_kind, 2)
                if self.in_f and "jvp-constant-early-return" in self.avoid:
                    value = f"({value} + 0.0 * np.sum(x))"
                out.append(f"{ind}    return {value}")
                self.features.add("early return")
                if self.in_f:
                    self.features.add("early return in f")
        return used

    @staticmethod
    def _merge_kinds(sc, inner):
        # Variables made in a branch or a loop body are not read after it (they may not exist);
        # reassigned ones keep their kind.
        for v in sc.vars:
            assert inner.vars[v] == sc.vars[v]

    def fill(self, sc, out, ind):
        L = self.pick([self.n] + [k for k in self.lengths(sc) if k != self.n])
        name = self.fresh("out")
        variant = self.pick(["loop", "recurrence", "constant"] if L > 1 else ["loop", "constant"])
        init = self.pick(["np.zeros", "np.ones"])
        out.append(f"{ind}{name} = {init}({L})")
        if variant == "loop":
            i = self.fresh("i")
            out.append(f"{ind}for {i} in range({L}):")
            inner = sc.child()
            inner.loops[i] = L
            inner.frozen.add(i)
            if self.chance(40):
                self.assign(inner, out, ind + "    ", True)
            op = self.pick(["=", "+="])
            out.append(f"{ind}    {name}[{i}] {op} {self.expr(inner, 0, 2)}")
            self._merge_kinds(sc, inner)
        elif variant == "recurrence":
            i = self.fresh("i")
            out.append(f"{ind}{name}[0] = {self.expr(sc, 0, 2)}")
            out.append(f"{ind}for {i} in range(1, {L}):")
            inner = sc.child()
            inner.loops[i] = L
            inner.frozen.add(i)
            out.append(f"{ind}    {name}[{i}] = {self.pick(['0.5', '-0.7'])} * {name}[{i} - 1] + "
                       f"{self.expr(inner, 0, 2)}")
            self.features.add("recurrence")
        else:
            for c in sorted({self.pick(range(L)) for _ in range(self.pick([1, 2]))}):
                out.append(f"{ind}{name}[{c}] = {self.expr(sc, 0, 2)}")
        self.features.add("indexed write")
        self.written.add(name)
        sc.vars[name] = L

    def helper(self):
        name = f"h{len(self.helpers)}"
        ka, kb = self.pick([(self.n, 0), (0, 0), (self.n, self.n), (0, self.n)])
        rk = self.pick([ka, kb, 0, self.n])
        sc = _Scope({"a": ka, "b": kb})
        body: list = []
        self.block(sc, body, "    ", self.pick([1, 2, 3]), 1, False, rk)
        body.append(f"    return {self.expr(sc, rk, 2)}")
        self.helpers.append((name, (ka, kb), rk))
        return [f"def {name}(a, b):"] + body

    def function(self, x_kind, y_kind, budget):
        sc = _Scope({"x": x_kind, "y": y_kind})
        default = "default-argument" not in self.avoid and self.chance(30)
        if default:       # a parameter the calls leave at its default: a constant under every transform
            sc.vars["scale"] = 0
            sc.frozen.add("scale")
            self.features.add("default argument")
        self.in_f = True
        body: list = []
        self.block(sc, body, "    ", budget, 0, False, 0)
        names = list(sc.vars)
        last = names[-1]
        terms = [last] + [v for v in names[:-1] if self.chance(30)]
        def term(v):
            if sc.vars[v] == 0 and "jit-fused-sum-of-scalar" in self.avoid:
                return v
            return f"np.sum({v})"
        ret = " + ".join(f"{self.pick(['', '0.5 * ', '-0.3 * '])}{term(v)}" for v in terms)
        body.append(f"    return {ret}")
        return [f"def f(x, y{', scale=0.7' if default else ''}):"] + body


@st.composite
def programs(draw, max_budget=8, avoid=frozenset()):
    """Programs; `avoid` names constructs to leave out (see KNOWN_BUGS in test_random_programs.py)."""
    n = draw(st.integers(2, 4))
    g = _Gen(draw, n, avoid)
    x_kind = draw(st.sampled_from([n, 0]))
    y_kind = draw(st.sampled_from([0, n]))
    lines = ["import numpy as np", "", ""]
    for _ in range(draw(st.integers(0, 2))):
        lines += g.helper() + ["", ""]
    lines += g.function(x_kind, y_kind, draw(st.integers(2, max_budget)))
    # the same function of a dict of its arguments (pytree arguments; the harness checks it)
    lines += ["", "", "def f_tree(p):", "    return f(p['x'], p['y'])"]
    seed = draw(st.integers(0, 2 ** 31 - 1))
    # float32 arrays: s2s computes in float64 and gives float32 results (s2s/precision.py)
    x_type = draw(st.sampled_from(("array", "float32"))) if x_kind else draw(st.sampled_from(SCALAR_TYPES))
    y_type = "array" if y_kind else draw(st.sampled_from(SCALAR_TYPES))
    return Program("\n".join(lines) + "\n", x_kind, y_kind, n, seed, x_type, y_type, g.features)
