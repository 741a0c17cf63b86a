"""Stand-ins for Numba: shape (see s2s/backends/numba_numpy/__init__.py)."""
from __future__ import annotations
