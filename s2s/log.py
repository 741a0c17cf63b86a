"""What s2s tells the user while it works: the `s2s` logger and the compile notice.

- The `s2s` logger records each stage's time at INFO: the pipeline's stages (parse, normalize,
  transform, ..., write, load), and for Numba each compilation's typing, LLVM and cache-load time.
  `S2S_LOG=1` (or `info`, `debug`) sends it to stderr; any logging setup of the user's own works as
  well (`logging.getLogger("s2s").setLevel(logging.INFO)`).
- A compilation still running after NOTICE_AFTER seconds prints one line on stderr (what, for which
  argument types, in the background or not), so a long compile is never silent; `S2S_QUIET=1`
  turns the line off.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time

logger = logging.getLogger("s2s")

NOTICE_AFTER = 2.0      # seconds: shorter compiles say nothing


def configure_from_env() -> None:
    """`S2S_LOG=1|info|debug`: a stderr handler on the `s2s` logger at that level (once)."""
    value = os.environ.get("S2S_LOG", "").strip().lower()
    if not value or value in ("0", "off", "false", "no"):
        return
    level = logging.DEBUG if value == "debug" else logging.INFO
    if not any(getattr(h, "_s2s_env", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("s2s: %(message)s"))
        handler._s2s_env = True
        logger.addHandler(handler)
    logger.setLevel(level)


@contextlib.contextmanager
def timed(what: str, *details):
    """Log `what` and its wall time at INFO when the block ends (nothing to measure when off)."""
    if not logger.isEnabledFor(logging.INFO):
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        logger.info("%s%s: %.3f s", what, "".join(f" {d}" for d in details), time.perf_counter() - start)


def quiet() -> bool:
    return os.environ.get("S2S_QUIET", "").strip().lower() not in ("", "0", "false", "no")


@contextlib.contextmanager
def compile_notice(line: str, after: float | None = None):
    """Print `line` on stderr if the block is still running `after` seconds (NOTICE_AFTER) from now."""
    after = NOTICE_AFTER if after is None else after
    if quiet():
        yield
        return
    timer = threading.Timer(after, print_notice, (line,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def print_notice(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):     # (stderr closed at interpreter exit)
        pass
