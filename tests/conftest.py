"""Shared pytest configuration for the s2s test suite.

The tests are grouped by subsystem: ops (the rule table, op by op), frontend (what s2s reads:
closures, lists, side effects, call forms), reverse and forward (grad and jvp/jacobians on the
corpus, pytrees, remat, random programs), vmap, jit (Numba lowering, fusion, kernels), cache
(the generated-code and machine-code caches), pmap, cudasim (the CUDA target under Numba's
simulator, run in its own process), errors, cli, project (README, docs, layering, benchmarks),
golden (generated source pinned) and real (realistic programs). The modules they share (the
corpus, the op cases, finite differences, ...) are the package cases/, importable because
setup.cfg puts tests/ on sys.path (`from cases import corpus`).
"""


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden", action="store_true", default=False,
        help="rewrite tests/golden/*.py.txt from the current generated source instead of comparing")


# jit's first calls would otherwise answer with the generated Python while Numba compiles in the
# background (s2s/transformations/tiers.py): the suite tests the machine code, so jit waits for
# it; tests/jit/test_tiers.py turns the tiers on where it tests them.
import os as _os
_os.environ.setdefault("S2S_JIT_WAIT", "1")

# The CUDA tests need NUMBA_ENABLE_CUDASIM=1 before numba.cuda is imported: they run in
# their own pytest process (see .ci/run); a plain `pytest` leaves them out.
collect_ignore = [] if _os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" else ["cudasim"]


# The longest tests (minutes each, mostly Numba compiling) start first, so that pytest-xdist's
# workers are not left waiting at the end on one of them while the other sits idle (collected
# last, the random-program shards of 1-3 minutes each ran on one worker at the end).
_LONG_FIRST = (
    "test_random_programs.py::test_random_programs_shard",
    "test_warm_cache.py::",
    "test_op_sweep_jit.py::test_jit_hessian",
    "test_op_sweep_jit.py::test_jit_vmap_grad",
    "test_cli.py::test_example_script_runs",
)


def pytest_collection_modifyitems(config, items):
    def rank(item):
        for k, prefix in enumerate(_LONG_FIRST):
            if prefix in item.nodeid:
                return k
        return len(_LONG_FIRST)
    items.sort(key=rank)      # stable: the same order on every worker, as xdist requires
