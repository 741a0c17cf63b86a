"""Rules of s2s.runtime's own functions that generated code calls (seed_cotangent, unbroadcast, checks)."""
