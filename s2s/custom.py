"""User-defined derivative rules.

- `custom_vjp` / `custom_jvp`: JAX's API (`f.defvjp(fwd, bwd)`, `f.defjvp(rule)`).
- `adjoint(fn)` / `tangent(fn)`: Tangent-style templates in d[x] / t[x]
  notation, pasted into generated code (so they show in `s2s show`).
- `stop_gradient(x)`: the value of x, with no derivative.

Each registers an entry in the rule table; calls to the function from code
s2s transforms then use the rule instead of the function's source.
"""
from __future__ import annotations

import inspect
from typing import Callable

from .rules import registry
from .rules.template import Template
from .runtime import stop_gradient  # noqa: F401  (re-exported)


def _params(fun: Callable) -> list[inspect.Parameter]:
    params = list(inspect.signature(fun).parameters.values())
    for p in params:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TypeError(f"s2s custom rules need plain positional parameters; {fun.__name__} has {p}")
    return params


def _signature_text(params: list[inspect.Parameter]) -> str:
    parts = []
    for p in params:
        if p.default is inspect.Parameter.empty:
            parts.append(p.name)
        else:
            parts.append(f"{p.name}={p.default!r}")
    return ", ".join(parts)


class _CustomBase:
    kind = "custom"

    def __init__(self, fun: Callable):
        self.fun = fun
        self.__name__ = fun.__name__
        self.__qualname__ = fun.__qualname__
        self.__doc__ = fun.__doc__
        self.__module__ = fun.__module__
        self.params = _params(fun)
        self.rule_name = fun.__name__
        registry.register(self, self.rule_name, bindings={self.rule_name: self})

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def _template(self, kind: str, lines: list[str]) -> Template:
        from .frontend.namespace import base_namespace
        names = [p.name for p in self.params]
        out = "y" if "y" not in names else "out_"
        src = f"def {self.rule_name}_{kind}_rule({out}, {_signature_text(self.params)}):\n"
        src += "".join(f"    {line.format(out=out)}\n" for line in lines)
        ns = base_namespace()
        ns[self.rule_name] = self
        tmpl = Template.from_source(src, f"{self.rule_name}_{kind}_rule", "d" if kind == "adjoint" else "t", ns,
                                    stem=f"rule_{self.rule_name}_{kind}")
        return tmpl


class custom_vjp(_CustomBase):
    """A function with a user-supplied reverse-mode rule (JAX's signature).

        @s2s.custom_vjp
        def f(x, y): ...
        def f_fwd(x, y): return f(x, y), residuals
        def f_bwd(residuals, g): return (dx, dy)
        f.defvjp(f_fwd, f_bwd)
    """

    def defvjp(self, fwd: Callable, bwd: Callable) -> "custom_vjp":
        self.fwd, self.bwd = fwd, bwd
        names = [p.name for p in self.params]
        args = ", ".join(names)
        lines = [f"d[{n}] = custom_vjp_cotangent({self.rule_name}, {i}, d[{{out}}], {args})"
                 for i, n in enumerate(names)]
        registry.register(self, self.rule_name, adjoint=self._template("adjoint", lines))
        return self

    def cotangents(self, g, *args):
        _, residuals = self.fwd(*args)
        cts = self.bwd(residuals, g)
        if not isinstance(cts, tuple) or len(cts) != len(args):
            got = f"a tuple of {len(cts)}" if isinstance(cts, tuple) else type(cts).__name__
            raise TypeError(f"the bwd rule of {self.__name__} must return a tuple of {len(args)} cotangents "
                            f"(one per argument), got {got}")
        return cts


class custom_jvp(_CustomBase):
    """A function with a user-supplied forward-mode rule (JAX's signature).

        @s2s.custom_jvp
        def f(x): ...
        @f.defjvp
        def f_jvp(primals, tangents):
            x, = primals; t, = tangents
            return f(x), t * ...
    Reverse mode uses the rule too (one jvp per input element: meant for
    small, scalar-ish functions, as custom_jvp usually is).
    """

    def defjvp(self, rule: Callable) -> Callable:
        self.jvp_rule = rule
        names = [p.name for p in self.params]
        prim = ", ".join(names) + ("," if len(names) == 1 else "")
        tans = ", ".join(f"t[{n}]" for n in names) + ("," if len(names) == 1 else "")
        tangent_lines = [f"t[{{out}}] = custom_jvp_tangent({self.rule_name}, ({prim}), ({tans}))"]
        args = ", ".join(names)
        adjoint_lines = [f"d[{n}] = custom_jvp_cotangent({self.rule_name}, {i}, d[{{out}}], {args})"
                         for i, n in enumerate(names)]
        registry.register(self, self.rule_name, tangent=self._template("tangent", tangent_lines),
                          adjoint=self._template("adjoint", adjoint_lines))
        return rule


def adjoint(fn: Callable, name: str | None = None):
    """Register a Tangent-style adjoint template for `fn`:

        @s2s.adjoint(my_op)
        def _(y, x):
            d[x] = d[y] * my_op_derivative(x)
    `d[y]` is the cotangent of the result; `d[x] = e` adds e to x's cotangent.
    Names the template uses are taken from the template's module.
    """
    rule_name = name or fn.__name__

    def wrap(template_fn):
        registry.register(fn, rule_name, bindings={rule_name: fn},
                          adjoint=Template(template_fn, kind="d"))
        return template_fn
    return wrap


def tangent(fn: Callable, name: str | None = None):
    """Register a forward-mode template for `fn` (`t[y] = ... t[x] ...`)."""
    rule_name = name or fn.__name__

    def wrap(template_fn):
        registry.register(fn, rule_name, bindings={rule_name: fn},
                          tangent=Template(template_fn, kind="t"))
        return template_fn
    return wrap
