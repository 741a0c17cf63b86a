"""The rule table's machinery: the `OpRule` record and its registration (registry.py), the template
notation (template.py), the batching kinds (batch_rules.py), and table.py, which imports every op
family (s2s/ops/<family>/rules.py: each op's adjoint, tangent and the rest of its record, with the
op helpers the generated code calls beside them) and is the table the transforms read (`lookup`,
`composite_of`, `RULES`). This package file imports nothing, so a helper module can be imported
without loading the whole table.

Every public function of an op helper module (s2s/ops/<family>/helpers.py) is visible, by name, in generated code (emit
imports it from its module, one of frontend/namespace.py's HELPER_MODULES), and is one of three
kinds, which its rule module says: bookkeeping (registered `nondiff`), readable (plain NumPy that
s2s reads and differentiates like a user's helper) or ruled (its own adjoint and tangent rule).
docs/rules.md ("Helpers instead of branches") describes the three; tests/ops/test_op_sweep.py checks
that every public helper either has a rule or normalizes as a readable helper.
"""
