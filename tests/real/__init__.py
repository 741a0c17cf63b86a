"""Corpus of realistic NumPy programs: see test_real_programs.py."""
