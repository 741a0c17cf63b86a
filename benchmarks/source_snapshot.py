"""The generated source of every test-corpus program, for checking that a refactor changes no code.

    python3 benchmarks/source_snapshot.py before.json        (on the commit before the change)
    python3 benchmarks/source_snapshot.py after.json         (after it)
    python3 benchmarks/source_snapshot.py --diff before.json after.json

Records `s2s.show` of grad, jvp and vmap for each program of tests/cases' corpus, op cases and
golden sources, and of jit and jit(grad) on their example arguments (generation only: nothing is
compiled; about 20 s).  Paths under the checkout and /tmp are blanked, so two checkouts compare.
Run both sides with the same PYTHONHASHSEED and a fresh S2S_CACHE_DIR each: a warm cache hands
back whatever source an earlier s2s wrote.  tests/golden/test_deterministic_source.py checks
that the seed does not matter; --diff exits 1 when an entry differs and prints the first few
(SHOW=n for more).
"""
from __future__ import annotations

import difflib
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _diff(path_a: str, path_b: str) -> int:
    with open(path_a) as fa, open(path_b) as fb:
        a, b = json.load(fa), json.load(fb)
    keys = sorted(set(a) | set(b))
    differ = [k for k in keys if a.get(k) != b.get(k)]
    print(f"{len(keys)} entries, {len(differ)} differ")
    for k in differ[:int(os.environ.get("SHOW", "5"))]:
        print("=====", k)
        before = (a.get(k) or "<missing>\n").splitlines(True)
        after = (b.get(k) or "<missing>\n").splitlines(True)
        print("".join(difflib.unified_diff(before, after, n=1))[:3000])
    return 1 if differ else 0


def _cases():
    from cases import corpus, golden_sources, op_cases
    for fn, make, argnums in corpus.CASES:
        yield "corpus." + fn.__name__, fn, make, argnums
    for c in op_cases.CASES:
        yield "op." + c.name, c.fn, c.make, 0
    for name in sorted(vars(golden_sources)):
        f = getattr(golden_sources, name)
        if callable(f) and getattr(f, "__module__", "") == golden_sources.__name__:
            yield "golden." + name, f, None, 0


def _snapshot(out_path: str) -> None:
    sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]      # (a script: the checkout's s2s and cases)
    import numpy as np

    import s2s
    out: dict[str, str] = {}

    def blank(text: str) -> str:
        return re.sub(r"/tmp/[^\s'\"]*", "<TMP>", text.replace(ROOT, "<ROOT>"))

    def record(key, make_source):
        try:
            out[key] = blank(make_source())
        except Exception as exc:        # a refusal is recorded too: it must stay the same
            out[key] = f"ERROR {type(exc).__name__}: {blank(str(exc).splitlines()[0] if str(exc) else '')}"

    for key, fn, make, argnums in _cases():
        record(key + ".grad", lambda: s2s.show(fn, "grad", argnums=argnums))
        record(key + ".jvp", lambda: s2s.show(fn, "jvp", argnums=argnums))
        record(key + ".vmap", lambda: s2s.show(fn, "vmap"))
        if make is not None:
            args = make(np.random.default_rng(0))
            record(key + ".jit_grad", lambda: s2s.show(s2s.jit(s2s.grad(fn, argnums=argnums)), example_args=args))
            record(key + ".jit", lambda: s2s.show(s2s.jit(fn), example_args=args))
    with open(out_path, "w") as f:
        json.dump(out, f, indent=0, sort_keys=True)
    print(len(out), "entries;", sum(v.startswith("ERROR") for v in out.values()), "refused")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--diff":
        sys.exit(_diff(sys.argv[2], sys.argv[3]))
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    _snapshot(sys.argv[1])
