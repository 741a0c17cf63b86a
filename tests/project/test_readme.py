"""The outputs README.md (and docs/rules.md) quote are what s2s really prints.

Each test takes the example code and the quoted output from the document,
runs the example in a fresh Python process (its own temporary directory and
S2S_CACHE_DIR, so neither paths nor caches leak in from elsewhere), and
compares.  The documents name their example files `/tmp/demo.py` and
`/tmp/norms.py`; the tests write them to a temporary directory instead and
put `/tmp` back in the output, which is the only normalization.  When code
generation changes on purpose, rerun the example and paste the new output
into the document.
"""
import difflib
import os
import re
import shlex
import subprocess
import sys

import pytest

from cases.paths import ROOT
README = os.path.join(ROOT, "README.md")
RULES = os.path.join(ROOT, "docs", "rules.md")

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _blocks(text):
    """[(start offset, language, body)] of the fenced code blocks."""
    return [(m.start(), m.group(1), m.group(2)) for m in _FENCE.finditer(text)]


def _block_before(text, pos, lang):
    found = [b for s, lg, b in _blocks(text) if s < pos and lg == lang]
    assert found, f"no ```{lang} block before offset {pos}"
    return found[-1]


def _block_after(text, pos, lang):
    found = [b for s, lg, b in _blocks(text) if s > pos and lg == lang]
    assert found, f"no ```{lang} block after offset {pos}"
    return found[0]


def _find(text, phrase):
    pos = text.find(phrase)
    assert pos >= 0, f"README.md no longer contains {phrase!r}; update tests/project/test_readme.py with it"
    return pos


def _run(tmp_path, argv):
    env = dict(os.environ, S2S_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("PYTHONSTARTUP", None)
    return subprocess.run(argv, cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=300)


def _as_tmp(text, tmp_path, filename):
    """The output as if the file had been /tmp/<filename>."""
    for p in {str(tmp_path / filename), os.path.realpath(str(tmp_path / filename))}:
        text = text.replace(p, "/tmp/" + filename)
    return text


def _same(actual, expected, what):
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                            "documented", "actual"))
        pytest.fail(f"{what} differs from the real output:\n{diff}")


_SHOW_CLAIM = "`s2s.show(f)` for the example above prints (verbatim"


def test_show_block_is_verbatim(tmp_path):
    text = _read(README)
    pos = _find(text, _SHOW_CLAIM)
    assert "`/tmp/demo.py`" in text[pos:pos + 200]
    example = _block_before(text, pos, "python")
    expected = _block_after(text, pos, "python")
    assert "def f(" in example and "s2s.show(f)" in example
    (tmp_path / "demo.py").write_text(example, encoding="utf-8")
    driver = ("import contextlib, io, sys\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n"
              "    import demo\n"          # runs the example (its prints are not part of the claim)
              "import s2s\n"
              "sys.stdout.write(s2s.show(demo.f))\n")
    proc = _run(tmp_path, [sys.executable, "-c", driver])
    assert proc.returncode == 0, proc.stdout
    _same(_as_tmp(proc.stdout, tmp_path, "demo.py"), expected, "README's s2s.show(f) block")


_CLI_CLAIM = "the command, run in `/tmp`, prints (verbatim):"


def test_cli_error_block_is_verbatim(tmp_path):
    text = _read(README)
    pos = _find(text, _CLI_CLAIM)
    source = _block_before(text, pos, "python")
    assert "`/tmp/norms.py`" in text[pos - len(source) - 200:pos]
    block = _block_after(text, pos, "text")
    first, expected = block.split("\n", 1)
    assert first.startswith("$ "), first
    argv = shlex.split(first[2:])
    assert argv[:3] == ["python", "-m", "s2s"], argv
    (tmp_path / "norms.py").write_text(source, encoding="utf-8")
    proc = _run(tmp_path, [sys.executable] + argv[1:])
    assert proc.returncode == 1, proc.stdout        # "1 when s2s refuses the function"
    _same(_as_tmp(proc.stdout, tmp_path, "norms.py"), expected, "README's `s2s show` error block")


def test_every_verbatim_claim_is_checked():
    """A new "verbatim" output in the README needs a test here."""
    text = _read(README)
    claims = [m.start() for m in re.finditer(r"verbatim", text)]
    checked = [text.find(_SHOW_CLAIM), text.find(_CLI_CLAIM)]
    unchecked = [text[max(0, c - 80):c + 20] for c in claims
                 if not any(0 <= k <= c < k + max(len(_SHOW_CLAIM), len(_CLI_CLAIM)) for k in checked)]
    assert not unchecked, f"README claims verbatim output that tests/project/test_readme.py does not check: {unchecked}"


def test_rules_md_excerpts_are_real(tmp_path):
    """docs/rules.md quotes two pieces of generated code "from an actual run"."""
    text = _read(RULES)
    pos = _find(text, "shows the rule pasted in (from an actual run):")
    hypot_example = _block_before(text, pos, "python")
    hypot_excerpt = _block_after(text, pos, "python")
    probit = _block_before(text, _find(text, "The template's parameters mirror the function's"), "python")
    contains = re.search(r"s2s\.show\(probit_scores\) contains\n\s*#\s+(.*)\n", probit)
    assert contains, "docs/rules.md: the probit example no longer says what its s2s.show contains"
    probit_code = probit[:probit.index("s2s.grad(probit_scores)")]
    (tmp_path / "hypot_demo.py").write_text("import numpy as np\nimport s2s\n\n" + hypot_example, encoding="utf-8")
    (tmp_path / "probit_demo.py").write_text(probit_code, encoding="utf-8")
    driver = ("import sys\n"
              "import s2s, hypot_demo, probit_demo\n"
              "sys.stdout.write(s2s.show(hypot_demo.f, argnums=(0, 1)) + '\\n=====\\n'"
              " + s2s.show(probit_demo.probit_scores))\n")
    proc = _run(tmp_path, [sys.executable, "-c", driver])
    assert proc.returncode == 0, proc.stdout
    hypot_out, probit_out = proc.stdout.split("\n=====\n")
    assert hypot_excerpt in hypot_out, f"docs/rules.md's hypot excerpt is not in the real output:\n{hypot_out}"
    assert contains.group(1).strip() in probit_out, probit_out
