"""Where the repository's files are, for tests that read them or run a child Python."""
import os

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TESTS)


def pythonpath(*folders: str) -> str:
    """PYTHONPATH for a child Python that imports the case modules (`from cases import ...`) and the
    given folders' modules, ahead of the parent's own PYTHONPATH (which may hold the s2s under test)."""
    inherited = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join([*folders, TESTS, *([inherited] if inherited else [])])
