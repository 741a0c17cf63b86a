"""The parts of `Normalizer` share state only through `NormalizeState` (s2s/frontend/normalize_state.py).

Each part (resolution.py, inlining.py, statements.py, ...) reads and writes what the others learned
through `self.state`, whose fields are declared (with who writes and who reads them) in one
dataclass; a part that kept an attribute of its own on `self` would be state no declaration names.
Checked here: every `self.<name>` in the parts' code is `self.state` or a method, every
`state.<name>` is a declared field, and each field's comment names every part that uses it.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import re

import pytest

from s2s.frontend.normalize import Normalizer
from s2s.frontend.normalize_state import NormalizeState
from s2s.frontend.parse import parse_function


def _parts():
    return [c for c in Normalizer.__mro__ if c.__module__.startswith("s2s.frontend.")]


def _attribute_uses(cls):
    """(line, name) of every `self.<name>` and `state.<name>` in the class's own methods."""
    tree = ast.parse(inspect.getsource(inspect.getmodule(cls)))
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    selfs, states = [], []

    def walk(n):
        for c in ast.iter_child_nodes(n):
            if isinstance(c, ast.ClassDef):     # (a visitor class inside a method has its own `self`)
                continue
            if isinstance(c, ast.Attribute) and isinstance(c.value, ast.Name) and c.value.id == "self":
                selfs.append((c.lineno, c.attr))
            if isinstance(c, ast.Attribute) and (isinstance(c.value, ast.Name) and c.value.id == "state" or
                                                 isinstance(c.value, ast.Attribute) and c.value.attr == "state"):
                states.append((c.lineno, c.attr))
            walk(c)
    walk(node)
    return selfs, states


def test_parts_keep_no_attributes_of_their_own():
    methods = {k for k in dir(Normalizer) if callable(getattr(Normalizer, k))}
    stray = [f"{cls.__module__}.{cls.__name__} line {line}: self.{attr}"
             for cls in _parts() for line, attr in _attribute_uses(cls)[0]
             if attr != "state" and attr not in methods]
    assert not stray, ("state shared by the parts of Normalizer belongs in NormalizeState "
                       "(s2s/frontend/normalize_state.py), declared with who writes and reads it:\n  "
                       + "\n  ".join(stray))


def test_state_fields_used_are_declared():
    fields = {f.name for f in dataclasses.fields(NormalizeState)}
    unknown = [f"{cls.__module__} line {line}: state.{attr}"
               for cls in _parts() for line, attr in _attribute_uses(cls)[1] if attr not in fields]
    assert not unknown, "\n".join(unknown)


def test_every_declared_field_is_used():
    used = {attr for cls in _parts() for _, attr in _attribute_uses(cls)[1]}
    unused = {f.name for f in dataclasses.fields(NormalizeState)} - used
    assert not unused, f"fields no part reads or writes any more: {sorted(unused)}"


def _square(x):
    return x * x


def test_undeclared_state_cannot_be_set():
    state = NormalizeState.start(parse_function(_square))
    with pytest.raises(AttributeError):
        state.scratch = {}      # (a typo or an undeclared field: refused, not silently added)


def _declared_users() -> dict[str, set[str] | None]:
    """field -> the modules its comment in normalize_state.py names (None: "every part")."""
    from s2s.frontend import normalize_state
    lines = inspect.getsource(normalize_state).splitlines()
    users: dict[str, set[str] | None] = {}
    for i, line in enumerate(lines):
        m = re.match(r"    (\w+): ", line)
        if not m or m.group(1) not in {f.name for f in dataclasses.fields(NormalizeState)}:
            continue
        j, comment = i - 1, []
        while lines[j].startswith("    # ") and not lines[j].startswith("    # -----"):
            comment.insert(0, lines[j])
            j -= 1
        text = " ".join(comment)
        users[m.group(1)] = None if "every part" in text else set(re.findall(r"(\w+)\.py", text))
    return users


def test_each_field_names_the_parts_that_use_it():
    declared = _declared_users()
    undeclared = [f"{field}: used in {cls.__module__.rsplit('.', 1)[1]}.py (line {line})"
                  for cls in _parts() for line, field in _attribute_uses(cls)[1]
                  if declared.get(field) is not None and cls.__module__.rsplit(".", 1)[1] not in declared[field]]
    assert not undeclared, ("a part uses a field its comment in normalize_state.py does not name; add the "
                            "part to who writes / reads it:\n  " + "\n  ".join(sorted(set(undeclared))))
