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

logger = logging.getLogger("s2s")

NOTICE_AFTER = 2.0      # seconds: shorter compiles say nothing


_OFF = ("", "0", "false", "no", "off")


def env_flag(name: str) -> bool:
    """An on/off environment variable: on unless unset, empty, 0, false, no or off."""
    return os.environ.get(name, "").strip().lower() not in _OFF


def configure_from_env() -> None:
    """`S2S_LOG=1|info|debug`: a stderr handler on the `s2s` logger at that level (once)."""
    if not env_flag("S2S_LOG"):
        return
    value = os.environ["S2S_LOG"].strip().lower()
    level = logging.DEBUG if value == "debug" else logging.INFO
    if not any(getattr(h, "_s2s_env", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("s2s: %(message)s"))
        handler._s2s_env = True
        logger.addHandler(handler)
    logger.setLevel(level)


def quiet() -> bool:
    return env_flag("S2S_QUIET")


def notice_later(line: str, finished=None) -> threading.Timer | None:
    """Print `line` on stderr NOTICE_AFTER seconds from now, unless `finished()` says the work is
    done by then (or S2S_QUIET is set: None); cancel the timer when the work ends."""
    if quiet():
        return None
    timer = threading.Timer(NOTICE_AFTER, _print_notice, (line, finished))
    timer.daemon = True
    timer.start()
    return timer


@contextlib.contextmanager
def compile_notice(line: str):
    """Print `line` on stderr if the block is still running NOTICE_AFTER seconds from now."""
    timer = notice_later(line)
    try:
        yield
    finally:
        if timer is not None:
            timer.cancel()


def _print_notice(line: str, finished=None) -> None:
    if finished is not None and finished():
        return
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):     # (stderr closed at interpreter exit)
        pass
