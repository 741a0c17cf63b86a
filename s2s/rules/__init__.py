"""The rule table: everything s2s knows about operations lives in this folder.

One module per operation family holds its rules (adjoint, tangent, batching kind); the op helpers
the generated code calls sit beside them. `rules.table` imports every family and is the table
the transforms read (`lookup`, `composite_of`, `RULES`). This package file imports nothing, so a
helper module can be imported without loading the whole table.
"""
