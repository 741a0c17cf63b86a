"""Shared modules of the test suite: the case modules (functions s2s reads the source of, one
per file so their line numbers stay put) and fd, the finite-difference reference.

tests/ is on sys.path (setup.cfg's pytest `pythonpath`), so tests import them as
`from cases import corpus` and `from cases.fd import numeric_grad`."""
