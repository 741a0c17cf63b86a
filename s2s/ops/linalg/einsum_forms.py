"""np.einsum calls -> the one form the einsum rule knows: a subscripts string and one to three operands.

Leaves for normalization: every `np.einsum` call either starts with a string constant and has at
most three operands, or was refused.  Two forms are rewritten:

- the sublist form `np.einsum(x, (0, 1), y, (1, 2), (0, 2))` (literal sublists of ints and
  `...`) becomes `np.einsum("ab,bc->ac", x, y)`; read as it is, its first operand would bind to
  the rule's `subscripts` argument and get no derivative (a silent zero);
- four or more operands become a chain of pairwise contractions, left to right, each keeping
  the indices a later operand or the output still needs (the result is the same contraction;
  np.einsum itself contracts left to right unless asked to optimize).

A first argument that is not a string constant followed by one that is not a literal sublist is
subscripts in a variable (a string at run time) and stays; sublists it cannot read (built in the
function) are refused, since the rule could not tell operands from subscripts.

`call_form` is np.einsum's OpRule.call_form: normalization applies it to each call before the rule.
"""
from __future__ import annotations

import copy
import string

import gast

from ...errors import UnsupportedSyntaxError
from ...frontend.ast_build import const, copy_loc
from ...frontend.nodes import clone

_LETTERS = string.ascii_lowercase + string.ascii_uppercase   # np.einsum's sublist numbering


class EinsumFormError(ValueError):
    """A form of np.einsum s2s cannot read (the message says why)."""


def _sublist(node) -> str | None:
    """The letters of a literal sublist `(0, 1, ...)`, or None if `node` is not one."""
    if not isinstance(node, (gast.Tuple, gast.List)):
        return None
    out = []
    for e in node.elts:
        if isinstance(e, gast.Constant) and e.value is Ellipsis or isinstance(e, gast.Name) and e.id == "Ellipsis":
            out.append("...")
        elif isinstance(e, gast.Constant) and type(e.value) is int and 0 <= e.value < len(_LETTERS):
            out.append(_LETTERS[e.value])
        else:
            return None
    return "".join(out)


def _string_const(node) -> str | None:
    return node.value if isinstance(node, gast.Constant) and isinstance(node.value, str) else None


def explicit_output(subscripts: str) -> str:
    """`subscripts` with its output written out (np.einsum's implicit output: the letters used
    once, in alphabetical order, after `...` when an operand has one)."""
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        return spec
    inputs = spec.split(",")
    letters = [c for term in inputs for c in term.replace("...", "")]
    once = sorted(c for c in set(letters) if letters.count(c) == 1)
    return spec + "->" + ("..." if "..." in spec else "") + "".join(once)


def pairwise_chain(subscripts: str, count: int) -> list[str]:
    """The subscripts of contractions, left to right, that compute `subscripts` over `count`
    operands with at most three at a time: each step contracts the running result with the
    next operand (the last step takes the last two), keeping the letters needed later."""
    spec = explicit_output(subscripts)
    inputs, output = spec.split("->")
    terms = inputs.split(",")
    if len(terms) != count:
        raise EinsumFormError(f"np.einsum subscripts {subscripts!r} name {len(terms)} operands, "
                              f"the call passes {count}")
    steps = []
    acc = terms[0]
    for k in range(1, len(terms) - 2):
        later = "".join(terms[k + 1:]) + output
        kept = [c for c in dict.fromkeys((acc + terms[k]).replace("...", "")) if c in later]
        ell = "..." if "..." in acc + terms[k] else ""
        step_out = ell + "".join(kept)
        steps.append(f"{acc},{terms[k]}->{step_out}")
        acc = step_out
    steps.append(f"{acc},{terms[-2]},{terms[-1]}->{output}")
    return steps


def rewrite(call: gast.Call) -> gast.Call:
    """`call` (of np.einsum) in the form the rule reads: a string constant first, at most three
    operands.  Raises EinsumFormError for forms that cannot be read statically."""
    bad = [k.arg for k in call.keywords if k.arg not in ("optimize", "dtype", "order", "casting")]
    if bad:
        raise EinsumFormError(f"np.einsum with keyword {bad[0]}= is not supported")
    args = list(call.args)
    if not args:
        raise EinsumFormError("np.einsum needs subscripts and operands")
    spec = _string_const(args[0])
    if spec is None and (len(args) < 2 or _sublist(args[1]) is None):
        return call        # subscripts in a variable (a string at run time: s2s's own helpers do this)
    if spec is None:
        out = None
        if len(args) % 2:                      # an odd count: the last sublist is the output's
            out = _sublist(args[-1])
            if out is None:
                raise EinsumFormError("np.einsum's output sublist is not a literal tuple of ints")
            args = args[:-1]
        operands, terms = args[0::2], [_sublist(a) for a in args[1::2]]
        if not terms or any(t is None for t in terms):
            raise EinsumFormError("np.einsum's first argument is neither a string constant nor an operand "
                                  "followed by a literal sublist")
        spec = ",".join(terms)
        spec = spec + "->" + out if out is not None else explicit_output(spec)
        args = [gast.Constant(spec, None)] + operands
    operands = args[1:]
    if len(operands) <= 3:
        new = copy.copy(call)
        new.args = args
        return new
    steps = pairwise_chain(spec, len(operands))
    acc = operands[0]
    for k, step in enumerate(steps[:-1]):
        acc = gast.Call(func=clone(call.func), args=[gast.Constant(step, None), acc, operands[k + 1]],
                        keywords=[])
        gast.copy_location(acc, call)
    new = copy.copy(call)
    new.args = [gast.Constant(steps[-1], None), acc, operands[-2], operands[-1]]
    new.keywords = [k for k in call.keywords if k.arg != "optimize"]
    return new


def call_form(node, reader):
    """np.einsum as its rule reads it: subscripts string first, at most three operands.  Module
    constants count as the string or sublists they hold.  `reader` is the normalizer: its
    `try_resolve(expr)` (a module-level value, or None), `local_aggregate(name)` (None for a name
    that is not a local, else whether the function built it as a tuple/list) and `error(...)`."""
    args = list(node.args)
    first = reader.try_resolve(args[0]) if args and isinstance(args[0], (gast.Name, gast.Attribute)) else None
    if isinstance(first, str):
        args[0] = copy_loc(const(first), args[0])
    if args and not (isinstance(args[0], gast.Constant) and isinstance(args[0].value, str)):
        # the sublist form: a sublist after each operand, and maybe the output's last
        for k in [k for k in range(1, len(args), 2)] + ([len(args) - 1] if len(args) % 2 else []):
            a = args[k]
            built = reader.local_aggregate(a) if isinstance(a, gast.Name) else None
            if built is not None:
                if built:
                    raise reader.error(UnsupportedSyntaxError, "s2s cannot differentiate np.einsum with a "
                                       "sublist built in the function", node, "write the sublists inline, "
                                       "np.einsum(x, (0, 1), y, (1, 2)), or use a string")
                continue
            value = reader.try_resolve(a) if isinstance(a, (gast.Name, gast.Attribute)) else None
            if isinstance(value, (tuple, list)) and all(type(e) is int or e is Ellipsis for e in value):
                args[k] = copy_loc(gast.Tuple([const(e) for e in value], gast.Load()), a)
    node = copy.copy(node)
    node.args = args
    try:
        return rewrite(node)
    except EinsumFormError as exc:
        raise reader.error(UnsupportedSyntaxError, f"s2s cannot differentiate this np.einsum: {exc}", node,
                           "write the subscripts as a string literal: np.einsum('ij,jk->ik', a, b)") from None
