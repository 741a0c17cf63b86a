"""Corpus of realistic NumPy programs (issue 19): see test_real_programs.py."""
