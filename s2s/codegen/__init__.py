"""Codegen: naming conventions and emission of real source files."""
