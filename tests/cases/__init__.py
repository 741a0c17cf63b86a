"""Modules the tests share: the case modules (module-level functions whose source s2s reads, with
their inputs: corpus, op_cases, vmap_cases, ...), the checks several test modules run
(closure_checks, pmap_cases), fd (finite differences, the reference every gradient test compares
to) and paths (the repository's folders, and the PYTHONPATH a child Python needs).

tests/ is on sys.path (setup.cfg's pytest `pythonpath`), so tests import them as
`from cases import corpus` and `from cases.fd import numeric_grad`."""
