"""Side effects that do not touch the maths run as written in the forward sweep.

Programs as users write them: validation that raises, f-strings, logging, warnings, print,
plotting on a branch, `with np.errstate(...)` and other context managers, try/except that
re-raises, `del`, imports inside the function, `:=`, `for ... else` / `while ... else`. Each is
differentiated (grad against central finite differences, and a closed form where easy; some under
jvp, vmap(grad) against a Python loop, jit(grad) against grad) and its side effect checked (the
exception and its message, the log record, the warning, the printed text, the floating-point
state). What s2s cannot honour is refused at the user's line.
"""
from __future__ import annotations

import contextlib
import linecache
import logging
import os
import warnings

import numpy as np
import pytest

import s2s
from s2s.errors import TransformError, UnsupportedSyntaxError

from cases.fd import assert_close, numeric_grad

THIS_FILE = os.path.abspath(__file__)
logger = logging.getLogger("s2s_side_effects_test")

X = np.array([0.3, -0.7, 1.1])
M = np.array([[1.0, 0.2], [0.3, 0.8]])


def _line(fn, needle: str) -> int:
    import inspect
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, text in enumerate(lines) if needle in text]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def _at(err, fn, needle: str) -> None:
    """The error names this file and the line of `fn` holding `needle`."""
    assert isinstance(err, TransformError), type(err)
    assert err.filename is not None and os.path.samefile(err.filename, THIS_FILE), err.filename
    assert err.lineno == _line(fn, needle), (err.lineno, _line(fn, needle), str(err))
    assert needle.strip() in linecache.getline(THIS_FILE, err.lineno)
    assert err.hint


def _fd_check(f, *args, argnum=0):
    got = s2s.grad(f, argnums=argnum)(*args)
    assert_close(got, numeric_grad(f, args, argnum))
    return got


# ----- raise, f-strings, assert -----------------------------------------------------------------
def check_matrix(m):
    if m.ndim != 2:
        raise ValueError(f"expected a matrix, got {m.ndim} dims")
    if m.shape[0] != m.shape[1]:
        raise ValueError(f"expected a square matrix, got {m.shape[0]}x{m.shape[1]}")
    return m


def quad_form(m, v):
    m = check_matrix(m)
    assert v.shape[0] == m.shape[0], f"v has {v.shape[0]} entries, m has {m.shape[0]} rows"
    return v @ (m @ v)


def test_raise_in_a_helper_differentiates_and_raises_the_users_error():
    v = np.array([0.5, -1.0])
    got = _fd_check(quad_form, M, v, argnum=1)
    assert_close(got, (M + M.T) @ v)                           # closed form
    assert_close(s2s.grad(quad_form)(M, v), np.outer(v, v))
    with pytest.raises(ValueError) as info:
        s2s.grad(quad_form)(X, v)
    assert str(info.value) == "expected a matrix, got 1 dims"
    with pytest.raises(ValueError) as info:
        s2s.grad(quad_form)(np.ones((2, 3)), v)
    assert str(info.value) == "expected a square matrix, got 2x3"
    with pytest.raises(AssertionError) as info:
        s2s.grad(quad_form, argnums=1)(M, X)
    assert str(info.value) == "v has 3 entries, m has 2 rows"


def test_raise_under_jvp_vmap_and_jit():
    v = np.array([0.5, -1.0])
    _, tangent = s2s.jvp(lambda w: quad_form(M, w), (v,), (np.array([1.0, 0.0]),))
    assert_close(tangent, ((M + M.T) @ v)[0])
    vs = np.array([[0.5, -1.0], [2.0, 0.1], [-0.3, 0.4]])
    batched = s2s.vmap(s2s.grad(quad_form, argnums=1), in_axes=(None, 0))(M, vs)
    assert_close(batched, np.stack([s2s.grad(quad_form, argnums=1)(M, w) for w in vs]))
    jitted = s2s.jit(s2s.grad(quad_form, argnums=1))
    assert_close(jitted(M, v), s2s.grad(quad_form, argnums=1)(M, v))
    with pytest.raises(ValueError) as info:
        jitted(np.ones((2, 3)), v)
    assert str(info.value) == "expected a square matrix, got 2x3"        # the f-string's own message
    with pytest.raises(AssertionError) as info:
        jitted(M, X)
    assert str(info.value) == "v has 3 entries, m has 2 rows"


# ----- logging, warnings, print, plotting ---------------------------------------------------------
def noisy_loss(w, x):
    pred = np.tanh(x @ w)
    loss = np.mean(pred ** 2)
    logger.info("loss %.4f", loss)
    logging.getLogger("s2s_side_effects_test.detail").debug("weights %s", w)
    if loss > 0.5:
        warnings.warn(f"large loss {loss:.1f}", RuntimeWarning)
    warnings.warn("noisy_loss is deprecated", DeprecationWarning)
    print(f"loss={loss:.4f} n={x.shape[0]}")
    print("w0", w[0].item())
    return loss


def test_logging_warnings_and_print_run_in_the_forward_sweep(caplog, capsys):
    w = np.array([0.2, -0.4, 0.1])
    x = np.arange(6.0).reshape(2, 3) / 5.0
    caplog.set_level(logging.DEBUG, logger="s2s_side_effects_test")
    with pytest.warns(DeprecationWarning, match="noisy_loss is deprecated"):
        got = s2s.grad(noisy_loss)(w, x)
    pred = np.tanh(x @ w)
    assert_close(got, x.T @ (2 * pred * (1 - pred ** 2)) / 2)          # closed form
    loss = np.mean(pred ** 2)
    assert [r.getMessage() for r in caplog.records if r.name == "s2s_side_effects_test"] == [f"loss {loss:.4f}"]
    assert any(r.name.endswith(".detail") and "weights" in r.getMessage() for r in caplog.records)
    assert capsys.readouterr().out == f"loss={loss:.4f} n=2\nw0 0.2\n"
    with pytest.warns(RuntimeWarning, match=r"^large loss 1\.0$"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        s2s.grad(noisy_loss)(np.full(3, 5.0), np.full((2, 3), 3.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(got, numeric_grad(noisy_loss, (w, x), 0))
        assert_close(s2s.jit(s2s.grad(noisy_loss))(w, x), got)
        assert f"loss={loss:.4f} n=2\nw0 0.2\n" in capsys.readouterr().out
        ws = np.stack([w, 2 * w])
        assert_close(s2s.vmap(s2s.grad(noisy_loss), in_axes=(0, None))(ws, x),
                     np.stack([s2s.grad(noisy_loss)(v, x) for v in ws]))
    assert capsys.readouterr().out.count("w0 0.4") == 2          # (once per example, then in the loop)


class FakeAxes:
    """Stands for a matplotlib Axes (its type comes from matplotlib, as the real one's does)."""

    def __init__(self):
        self.calls = []

    def imshow(self, m):
        self.calls.append(("imshow", np.array(m)))

    def set_title(self, text):
        self.calls.append(("title", text))


FakeAxes.__module__ = "matplotlib.axes._axes"


def plot_matrix(ax, m):
    ax.imshow(m)
    ax.set_title(f"max {m.max():.2f}")


def smoke_loss(x, ax):
    smoke = np.outer(x, x)
    if ax:
        plot_matrix(ax, smoke)
    return np.sum(smoke ** 2)


def test_plotting_on_a_branch_runs_when_ax_is_given():
    assert_close(s2s.grad(smoke_loss)(X, None), 4 * np.sum(X ** 2) * X)
    ax = FakeAxes()
    assert_close(s2s.grad(smoke_loss)(X, ax), 4 * np.sum(X ** 2) * X)
    assert ax.calls[0][0] == "imshow" and np.array_equal(ax.calls[0][1], np.outer(X, X))
    assert ax.calls[1] == ("title", f"max {np.outer(X, X).max():.2f}")


rng = np.random.default_rng(0)


def sorts_in_place(x):
    y = np.sin(x)
    y.sort()
    return np.sum(y * x)


def copies_into(x):
    y = np.zeros(3)
    np.copyto(y, x)
    return np.sum(y * x)


def shuffles(x):
    y = x * 2.0
    rng.shuffle(y)
    return np.sum(y * x)


def shuffles_scratch(x):
    scratch = np.arange(4.0)
    rng.shuffle(scratch)
    return np.sum(x ** 2)


@pytest.mark.parametrize(("fn", "needle"), [(sorts_in_place, "y.sort()"), (copies_into, "np.copyto(y, x)"),
                                            (shuffles, "rng.shuffle(y)")])
def test_a_call_that_may_change_an_array_the_maths_reads_is_refused(fn, needle):
    with pytest.raises(TransformError, match="may change it in place") as info:
        s2s.grad(fn)(X)
    _at(info.value, fn, needle)


def test_a_call_on_an_array_the_maths_does_not_read_runs():
    assert_close(s2s.grad(shuffles_scratch)(X), 2 * X)


# ----- with ------------------------------------------------------------------------------------------
def safe_log_loss(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(x > 0, np.log(np.abs(x)), -1.0)
    return np.sum(y * x)


def strict_log(x):
    with np.errstate(divide="raise"):
        y = np.log(x)
    return np.sum(y ** 2)


def test_errstate_is_in_force_in_the_forward_sweep():
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")         # no RuntimeWarning, forward or backward
        got = _fd_check(safe_log_loss, X)
    assert_close(got, np.where(X > 0, np.log(np.abs(X)) + 1.0, -1.0))
    with pytest.raises(FloatingPointError):
        s2s.grad(strict_log)(np.array([1.0, 0.0]))
    assert np.geterr() == before                         # left as it was, after the exception too
    assert_close(s2s.grad(strict_log)(np.array([2.0, 3.0])), 2 * np.log([2.0, 3.0]) / [2.0, 3.0])
    assert "with np.errstate" not in s2s.show(s2s.jit(s2s.grad(safe_log_loss)))
    assert_close(s2s.jit(s2s.grad(safe_log_loss))(X), got)       # (Numba keeps no error state)
    xs = np.stack([X, -X, 2 * X])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_close(s2s.vmap(s2s.grad(safe_log_loss))(xs), np.stack([s2s.grad(safe_log_loss)(v) for v in xs]))
        _, tangent = s2s.jvp(safe_log_loss, (X,), (np.ones(3),))
    assert_close(tangent, np.sum(got))


class Recorder:
    """A user's context manager: records when it is entered and left."""

    events: list = []

    def __init__(self, label):
        self.label = label

    def __enter__(self):
        Recorder.events.append(("enter", self.label))
        return self

    def __exit__(self, *exc):
        Recorder.events.append(("exit", self.label))
        return False

    def note(self, text):
        Recorder.events.append(("note", text))


def with_recorder(x):
    with Recorder("step") as rec, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = np.exp(x) * x
        rec.note(f"y0={y[0]:.2f}")
    return np.sum(y)


def test_a_users_context_manager_is_entered_around_the_body():
    Recorder.events.clear()
    got = _fd_check(with_recorder, X)
    assert_close(got, np.exp(X) * (1 + X))
    for run in (s2s.grad(with_recorder), lambda x: s2s.jvp(with_recorder, (x,), (np.ones(3),))):
        Recorder.events.clear()
        run(X)
        assert Recorder.events == [("enter", "step"), ("note", f"y0={np.exp(X[0]) * X[0]:.2f}"), ("exit", "step")]
    with pytest.raises(UnsupportedSyntaxError, match="jit cannot compile a `with` statement") as info:
        s2s.jit(s2s.grad(with_recorder))(X)
    _at(info.value, with_recorder, "with Recorder")


def suppresses(x):
    with contextlib.suppress(FloatingPointError):
        y = np.log(x)
    return np.sum(y)


def suppresses_logging(x):
    with contextlib.suppress(Exception):
        logger.info("x0 %s", x[0])
    return np.sum(x ** 3)


def uses_the_as_value(x):
    with Recorder("r") as rec:
        y = x * len(rec.label)
    return np.sum(y)


class Swallow:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return True


def swallowed(x):
    with Swallow():
        y = np.log(x)
        assert np.all(y < 10.0), f"too large: {np.max(y):.1f}"
    return np.sum(y)


def test_with_refusals_and_what_still_runs(caplog):
    assert_close(s2s.grad(swallowed)(X + 2.0), 1.0 / (X + 2.0))
    with pytest.raises(TransformError, match="swallowed the AssertionError raised in its body") as info:
        s2s.grad(swallowed)(np.array([1e6]))
    _at(info.value, swallowed, "with Swallow()")
    with pytest.raises(UnsupportedSyntaxError, match="contextlib.suppress") as info:
        s2s.grad(suppresses)(X)
    _at(info.value, suppresses, "with contextlib.suppress")
    caplog.set_level(logging.INFO, logger="s2s_side_effects_test")
    assert_close(s2s.grad(suppresses_logging)(X), 3 * X ** 2)
    assert any("x0" in r.getMessage() for r in caplog.records)
    with pytest.raises(UnsupportedSyntaxError, match="as rec` is used in the maths") as info:
        s2s.grad(uses_the_as_value)(X)
    _at(info.value, uses_the_as_value, "y = x * len(rec.label)")


# ----- try ---------------------------------------------------------------------------------------
def cholesky_or_explain(k):
    try:
        chol = np.linalg.cholesky(k)
    except np.linalg.LinAlgError as e:
        logger.error("cholesky failed for shape %s", k.shape)
        raise ValueError(f"k is not positive definite ({k.shape[0]}x{k.shape[1]})") from e
    else:
        logger.debug("cholesky ok")
    finally:
        logger.info("cholesky attempted")
    return chol


def gp_loss(a):
    k = np.outer(a, a) + np.eye(3) * 2.0
    chol = cholesky_or_explain(k)
    return np.sum(np.log(np.diag(chol)))


def test_try_that_reraises_differentiates_the_body(caplog):
    a = np.array([0.4, -0.2, 0.9])
    caplog.set_level(logging.DEBUG, logger="s2s_side_effects_test")
    got = _fd_check(gp_loss, a)
    k = np.outer(a, a) + np.eye(3) * 2.0
    assert_close(got, np.linalg.inv(k) @ a)          # d/da of log det(k) / 2
    assert [r.getMessage() for r in caplog.records][-2:] == ["cholesky ok", "cholesky attempted"]
    caplog.clear()
    with pytest.raises(ValueError) as info:
        s2s.grad(cholesky_or_explain_loss)(np.eye(3) * -1.0)
    assert str(info.value) == "k is not positive definite (3x3)"
    assert isinstance(info.value.__cause__, np.linalg.LinAlgError)
    assert [r.getMessage() for r in caplog.records] == ["cholesky failed for shape (3, 3)", "cholesky attempted"]
    with pytest.raises(UnsupportedSyntaxError, match="jit cannot compile a `try`") as info:
        s2s.jit(s2s.grad(gp_loss))(a)
    _at(info.value, cholesky_or_explain, "try:")


def cholesky_or_explain_loss(k):
    return np.sum(cholesky_or_explain(k))


def swallows(x):
    try:
        y = np.log(x)
    except FloatingPointError:
        y = x
    return np.sum(y)


def finally_returns(x):
    try:
        y = np.log(x)
    finally:
        return np.sum(x)


def optional_report(x):
    try:
        logger.info("x %s", np.round(x, 2))
        import not_a_module_s2s_knows  # noqa: F401
    except ImportError:
        logger.warning("no report module")
    return np.sum(np.cos(x))


def test_try_refusals_and_a_try_of_effects_only(caplog):
    with pytest.raises(UnsupportedSyntaxError, match="can end without raising") as info:
        s2s.grad(swallows)(X)
    _at(info.value, swallows, "except FloatingPointError")
    with pytest.raises(UnsupportedSyntaxError, match="in `finally`") as info:
        s2s.grad(finally_returns)(X)
    _at(info.value, finally_returns, "return np.sum(x)")
    caplog.set_level(logging.INFO, logger="s2s_side_effects_test")
    assert_close(s2s.grad(optional_report)(X), -np.sin(X))
    assert "no report module" in [r.getMessage() for r in caplog.records]
    caplog.clear()
    assert_close(s2s.jit(s2s.grad(optional_report))(X), -np.sin(X))     # (one block, in object mode)
    assert "no report module" in [r.getMessage() for r in caplog.records]


# ----- del, import, :=, loop else ----------------------------------------------------------------
def with_imports_and_del(x):
    import numpy.linalg as la
    from numpy import tanh as th
    y = np.exp(x)
    z = y * 2.0
    del y
    return la.norm(z) + np.sum(th(x))


def reads_after_del(x):
    y = np.exp(x)
    del y
    return np.sum(y)


def del_in_loop(x):
    y = x
    for _ in range(2):
        z = y * 2.0
        del y
    return np.sum(z)


def test_del_and_imports():
    got = _fd_check(with_imports_and_del, X)
    z = 2 * np.exp(X)
    assert_close(got, z * z / np.linalg.norm(z) + 1 - np.tanh(X) ** 2)
    assert_close(s2s.jit(s2s.grad(with_imports_and_del))(X), got)
    with pytest.raises(UnsupportedSyntaxError, match="`y` is read after `del y`") as info:
        s2s.grad(reads_after_del)(X)
    _at(info.value, reads_after_del, "return np.sum(y)")
    with pytest.raises(UnsupportedSyntaxError, match="`y` is read after `del y`") as info:
        s2s.grad(del_in_loop)(X)
    _at(info.value, del_in_loop, "z = y * 2.0")


def walrus_loss(x):
    if (n := x.shape[0]) > 2:
        s = np.sum(x ** 2) * n
    else:
        s = np.sum(x)
    y = x
    while (m := np.max(np.abs(y))) > 0.5:
        y = y * 0.5
    return s + np.sum(y) * m


def walrus_reads_first(x):
    n = 1.0
    return np.sum(x * n + (n := 2.0))


def walrus_in_comprehension(x):
    return sum([(v := t) * 2 for t in x])


def test_walrus():
    got = _fd_check(walrus_loss, X)
    assert_close(got, s2s.jit(s2s.grad(walrus_loss))(X))
    assert_close(s2s.vmap(s2s.grad(walrus_loss))(np.stack([X, 2 * X])),
                 np.stack([s2s.grad(walrus_loss)(X), s2s.grad(walrus_loss)(2 * X)]))
    with pytest.raises(UnsupportedSyntaxError, match="reads `n` before the `:=`") as info:
        s2s.grad(walrus_reads_first)(X)
    _at(info.value, walrus_reads_first, "(n := 2.0)")
    with pytest.raises(UnsupportedSyntaxError, match="`:=` inside a comprehension") as info:
        s2s.grad(walrus_in_comprehension)(X)
    _at(info.value, walrus_in_comprehension, "(v := t)")


def first_above(x, threshold):
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] > threshold:
            total = x[i] ** 2
            break
    else:
        total = np.sum(x) * 3.0
    return total


def damp(x):
    y = x
    k = 0
    while k < 3:
        y = np.sin(y)
        k += 1
        if np.sum(y) > 100.0:
            break
    else:
        y = y * 2.0
    return np.sum(y)


def test_loop_else():
    assert_close(_fd_check(first_above, X, 0.5), [0.0, 0.0, 2 * X[2]])
    assert_close(_fd_check(first_above, X, 5.0), [3.0, 3.0, 3.0])
    jitted = s2s.jit(s2s.grad(first_above))
    assert_close(jitted(X, 0.5), [0.0, 0.0, 2 * X[2]])
    assert_close(jitted(X, 5.0), [3.0, 3.0, 3.0])
    _fd_check(damp, X)
    _, tangent = s2s.jvp(damp, (X,), (np.ones(3),))
    assert_close(tangent, np.sum(s2s.grad(damp)(X)))


# ----- derivatives of derivatives read the kept effects again -----------------------------------
def checked_energy(x):
    if x.ndim != 1:
        raise ValueError(f"expected a vector, got {x.ndim} dims")
    with np.errstate(over="ignore"):
        e = np.sum(np.exp(x) * x)
    logger.debug("energy %s", e)
    return e


def test_hessian_of_a_function_with_effects():
    h = s2s.hessian(checked_energy)(X)
    assert_close(h, np.diag(np.exp(X) * (2 + X)))
    with pytest.raises(ValueError, match="expected a vector, got 2 dims"):
        s2s.hessian(checked_energy)(np.ones((2, 2)))
    a = np.array([0.4, -0.2, 0.9])                  # (a `try` and its handler, read again from generated code)
    grad = s2s.grad(gp_loss)
    assert_close(s2s.hessian(gp_loss)(a), np.stack([(grad(a + 1e-6 * e) - grad(a - 1e-6 * e)) / 2e-6
                                                    for e in np.eye(3)]), rtol=1e-4)
    with pytest.raises(ValueError) as info:
        s2s.hessian(cholesky_or_explain_loss)(np.eye(3) * -1.0)
    assert str(info.value) == "k is not positive definite (3x3)"


def stub(x):
    y = np.sin(x)
    raise NotImplementedError(f"stub called with {y.shape}")


def errstate_in_loop(x):
    for i in range(3):
        with np.errstate(divide="ignore"):
            if x[i] > 1.0:
                break
    return np.sum(x)


def test_a_function_that_always_raises_and_a_break_inside_with():
    with pytest.raises(NotImplementedError) as info:
        s2s.grad(stub)(X)
    assert str(info.value) == "stub called with (3,)"
    with pytest.raises(UnsupportedSyntaxError, match="inside a `with` or `try` block inside a loop") as info:
        s2s.grad(errstate_in_loop)(X)
    _at(info.value, errstate_in_loop, "break")


# ----- what stays refused ------------------------------------------------------------------------
def uses_match(x):
    match x.ndim:
        case 1:
            return np.sum(x)
    return 0.0


def test_match_stays_refused():
    with pytest.raises(UnsupportedSyntaxError, match="`match` statements") as info:
        s2s.grad(uses_match)(X)
    _at(info.value, uses_match, "match x.ndim")
