"""Which installed code s2s reads: the policy for functions of the standard library and of
installed packages (frontend/inlining.py asks `how_to_read`).

- NumPy and SciPy: read (their rules and definitions stand for most of them; the rest is read).
- The standard library, and packages of side effects (plotting, progress bars, experiment
  logging): run as written, never read (`print`-like calls, `json.loads`, `logging`).
- Any other installed package (scikit-learn, statsmodels, a user's own installed library): read
  when s2s can honour all of it, with the same rules and refusals as user code; a function whose
  source uses what s2s refuses runs as written instead, as before (its result a constant, refused
  only if a differentiated value flows into it).
- `s2s.library_code(read=[...], skip=[...])` overrides by top-level package: `read` always
  (its refusals are then errors at the user's line), `skip` never.

The choice decides the generated code, so `policy_key()` is part of the cache keys.
"""
from __future__ import annotations

from .call_sites import library_kind

READ = "read"           # inline it; its refusals are errors
TRY = "try"             # inline it if s2s can; else call it as written
SKIP = "skip"           # call it as written

_ALWAYS_READ = frozenset({"numpy", "scipy"})
_SIDE_EFFECT_PACKAGES = frozenset({
    "matplotlib", "seaborn", "plotly", "bokeh", "tqdm", "wandb", "mlflow", "tensorboard", "tensorboardX",
    "IPython", "ipywidgets", "rich", "click", "pytest", "hypothesis", "numba", "llvmlite", "gast", "pandas",
    "torch", "jax", "jaxlib", "tensorflow", "mpi4py", "numba_mpi"})

_USER_READ: set[str] = set()
_USER_SKIP: set[str] = set()


def library_code(read=(), skip=()) -> None:
    """Read (or never read) the functions of these top-level packages, whatever the default
    (`s2s.library_code(read=["mylib"], skip=["sklearn"])`); each call adds to the earlier ones."""
    for name in _names(read):
        _USER_SKIP.discard(name)
        _USER_READ.add(name)
    for name in _names(skip):
        _USER_READ.discard(name)
        _USER_SKIP.add(name)


def _names(packages) -> list[str]:
    if isinstance(packages, str):
        packages = [packages]
    return [p.split(".")[0] for p in packages]


def policy_key() -> tuple:
    return tuple(sorted(_USER_READ)), tuple(sorted(_USER_SKIP))


def how_to_read(fn) -> str:
    """READ, TRY or SKIP for a plain Python function."""
    filename = getattr(getattr(fn, "__code__", None), "co_filename", "") or ""
    package = (getattr(fn, "__module__", None) or "").split(".")[0]
    if package in _USER_SKIP:
        return SKIP
    if package in _USER_READ or package in _ALWAYS_READ or package == "s2s":
        return READ
    kind = library_kind(filename)
    if kind is None:
        return READ           # (the user's code)
    if kind == "stdlib" or package in _SIDE_EFFECT_PACKAGES:
        return SKIP
    return TRY
