"""Shared pytest configuration for the s2s test suite."""


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden", action="store_true", default=False,
        help="rewrite tests/golden/*.py.txt from the current generated source instead of comparing")


# The CUDA tests need NUMBA_ENABLE_CUDASIM=1 before numba.cuda is imported: they run in
# their own pytest process (see .ci/run); a plain `pytest` leaves them out.
import os as _os
collect_ignore = [] if _os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" else ["cudasim"]
