"""The options of one generation: a typed record, made once where a transformation object asks the
pipeline for code (transformations/*.py) and read by the pipeline's stages (pipeline.py).

The caches are keyed by `key()`, not by the record: the (name, value) pairs of the options that say
something for this generation, in the order the fields are declared. They are the tuples the
callers passed before this record existed, so the keys of entries already on disk do not change.
"""
from __future__ import annotations

import dataclasses
from typing import Any

_VMAP = ("in_axes", "out_axes", "axis_size")
_COMPILED = ("backend", "target", "cache")


@dataclasses.dataclass(frozen=True)
class GenerateOptions:
    in_axes: tuple | None = None        # vmap: each argument's batch axis (None: not batched); None: not a vmap
    out_axes: Any = 0                   # vmap: where the outputs' batch axis goes (an int, None, or a pytree)
    axis_size: int | None = None        # vmap: the batch size when no argument is batched
    param_facts: tuple | None = None    # compiled vmap: each argument's (rank, dtype kind), rows fused on them
    backend: str = "python"             # "python": NumPy source run by Python; "numba": compiled by Numba
    target: str = "cpu"                 # numba: "cpu" or "parallel" (the fused loops get parallel=True)
    cache: bool = True                  # numba: keep the machine code in Numba's disk cache
    tapes: str = "single"               # reverse mode: one list tape, or "per_variable" typed tapes (Numba)
    fuse: bool = True                   # numba: fuse elementwise loops (off for code that fails to compile fused)
    error_model: str | None = None      # numba: the error model compiled with; None: not in the key (numpy's)
    arg_facts: tuple | None = None      # each argument's (rank, dtype kind): the code is specialized on them
    twins: bool = False                 # numba cpu: fused loops get parallel twins (backends/parallel_twins.py)

    @property
    def compiled(self) -> bool:
        """Numba compiles the generated code (the pipeline runs its Numba stages)."""
        return self.backend == "numba"

    def key(self) -> tuple:
        """The (name, value) pairs the caches are keyed by: a vmap's axes (and, compiled, the facts its
        rows are fused on), a compiled generation's backend settings, typed tapes, argument facts."""
        names: list[str] = []
        if self.in_axes is not None:
            names += _VMAP + (("param_facts",) if self.compiled else ())
        if self.compiled:
            names += _COMPILED
        if self.compiled or self.tapes != "single":
            names.append("tapes")
        if self.compiled:
            names += ["fuse"] + (["error_model"] if self.error_model is not None else [])
        if self.arg_facts is not None:
            names.append("arg_facts")
        if self.twins:
            names.append("twins")
        return tuple((n, getattr(self, n)) for n in names)

    def for_example(self) -> GenerateOptions:
        """The options of the compiled primal a compiled vmap's per-example loop calls: the backend
        settings only (keyed without the error model, as that primal always was)."""
        return GenerateOptions(backend=self.backend, target=self.target, cache=self.cache, tapes=self.tapes,
                               fuse=self.fuse)


DEFAULT = GenerateOptions()
