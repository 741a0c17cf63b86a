"""Optimize: small passes over generated ANF (dead code, copies)."""
