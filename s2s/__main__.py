"""`python -m s2s ...`: the s2s command line (see s2s.cli)."""
import sys

from .cli import main

sys.exit(main())
