"""Shared pytest configuration for the s2s test suite."""


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden", action="store_true", default=False,
        help="rewrite tests/golden/*.py.txt from the current generated source instead of comparing")
