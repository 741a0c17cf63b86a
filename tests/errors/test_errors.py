"""Bad inputs raise the right s2s error, pointing at the offending user source.

Every function under test is defined at module level in this file, so
``inspect.getsource`` works and the expected location is this file. The
transformation may be lazy, so each check wraps both ``s2s.grad(f)`` and its
application in ``pytest.raises``.
"""
import contextlib
import ctypes
import ctypes.util
import inspect
import linecache
import os
import re

import numpy as np
import pytest

import s2s
from s2s.errors import (ArgumentError, NoRuleError, NonDifferentiableError,
                        RecursionNotSupportedError, S2SError, TransformError,
                        UnsupportedSyntaxError)

THIS_FILE = os.path.abspath(__file__)


# ---------------------------------------------------------------------------
# Functions under test
# ---------------------------------------------------------------------------

def uses_try(x):
    try:
        y = x * 2.0
    except ValueError:
        y = x
    return y


def uses_with(x):
    with contextlib.suppress(FloatingPointError):
        y = np.log(x) * x
    return y


def uses_yield(x):
    yield x * 2.0


async def uses_async(x):
    return x * 2.0


_counter = 0.0


def uses_global_write(x):
    global _counter
    _counter = _counter + x
    return x * _counter


def _make_nonlocal():
    total = 1.0

    def uses_nonlocal(x):
        nonlocal total
        total = total * x
        return total * x

    return uses_nonlocal


uses_nonlocal = _make_nonlocal()


def _helper_with_try(x):
    try:
        return x * 2.0
    except ZeroDivisionError:
        return x


def calls_helper_with_try(x):
    return _helper_with_try(x) + 1.0


def uses_frexp(x):
    mantissa = np.frexp(x)[0]
    return mantissa * x


_libm_name = ctypes.util.find_library("m")
_libm = ctypes.CDLL(_libm_name) if _libm_name else None
if _libm is not None:
    _libm.cbrt.restype = ctypes.c_double
    _libm.cbrt.argtypes = [ctypes.c_double]
    _c_cbrt = _libm.cbrt
else:  # pragma: no cover
    _c_cbrt = None


def uses_ctypes_function(x):
    return _c_cbrt(x) * x


def recursive_power(x, n):
    if n == 0:
        return 1.0
    return x * recursive_power(x, n - 1)


def mutual_a(x, n):
    if n <= 0:
        return x
    return mutual_b(x * 2.0, n - 1)


def mutual_b(x, n):
    return mutual_a(np.sin(x), n)


def square_sum(x):
    return np.sum(x * x)


def elementwise_square(x):
    return x * x


def one_arg(x):
    return x * x


def two_args(x, y):
    return x * y


# Positive controls: near the errors above, but valid.

_SCALE = 3.0


def reads_global(x):
    return _SCALE * x ** 2


def power_with_int_exponent(x, n):
    return x ** n


_square_inline, _cube_inline = (lambda x: x ** 2), (lambda x: x ** 3)
_multipliers = [lambda x, k=k: x * k for k in range(1, 4)]


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def _raises(exc_type, fn, *args, **grad_kwargs):
    """``s2s.grad(fn, **grad_kwargs)(*args)`` must raise ``exc_type``; returns the error."""
    with pytest.raises(exc_type) as info:
        s2s.grad(fn, **grad_kwargs)(*args)
    err = info.value
    assert isinstance(err, S2SError)
    return err


def _lines_of(fn, needle):
    """File line numbers, inside ``fn``'s source, of the lines containing ``needle``."""
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, line in enumerate(lines) if needle in line]
    assert hits, f"{needle!r} not in the source of {fn.__name__}"
    return hits


def _line_of(fn, needle):
    hits = _lines_of(fn, needle)
    assert len(hits) == 1, f"{needle!r} appears more than once in {fn.__name__}"
    return hits[0]


def _check_location(err, linenos, text):
    """The error points at this file, at one of ``linenos``, quoting ``text``."""
    assert isinstance(err, TransformError)
    if isinstance(linenos, int):
        linenos = {linenos}
    assert err.filename is not None, "error has no filename"
    assert os.path.samefile(err.filename, THIS_FILE), (err.filename, THIS_FILE)
    assert err.lineno in set(linenos), f"lineno {err.lineno}, expected one of {sorted(linenos)}"
    assert err.source_line is not None and text in err.source_line, err.source_line
    assert err.source_line.strip() == linecache.getline(THIS_FILE, err.lineno).strip()
    assert text in str(err)
    assert err.col is None or isinstance(err.col, int)
    assert err.hint is None or isinstance(err.hint, str)


# ---------------------------------------------------------------------------
# Unsupported syntax
# ---------------------------------------------------------------------------

def test_try_whose_handler_can_end_is_unsupported():
    # (an `except` clause that can end without raising, after a body that computes values)
    err = _raises(UnsupportedSyntaxError, uses_try, 1.5)
    _check_location(err, _line_of(uses_try, "except ValueError"), "except")
    assert err.hint, "unsupported syntax errors carry a hint"


def test_suppress_around_maths_is_unsupported():
    err = _raises(UnsupportedSyntaxError, uses_with, 1.5)
    _check_location(err, _line_of(uses_with, "with "), "with")
    assert err.hint


def test_generator_is_unsupported():
    err = _raises(UnsupportedSyntaxError, uses_yield, 1.5)
    _check_location(err, _line_of(uses_yield, "yield x"), "yield")


def test_async_def_is_unsupported():
    err = _raises(UnsupportedSyntaxError, uses_async, 1.5)
    _check_location(err, _line_of(uses_async, "async def"), "async def")


def test_global_write_is_unsupported():
    err = _raises(UnsupportedSyntaxError, uses_global_write, 1.5)
    lines = {_line_of(uses_global_write, "global _counter"),
             _line_of(uses_global_write, "_counter = _counter + x")}
    _check_location(err, lines, "_counter")


def test_nonlocal_is_unsupported():
    err = _raises(UnsupportedSyntaxError, uses_nonlocal, 1.5)
    lines = {_line_of(uses_nonlocal, "nonlocal total"),
             _line_of(uses_nonlocal, "total = total * x")}
    _check_location(err, lines, "total")


def test_error_in_helper_points_at_helper():
    err = _raises(UnsupportedSyntaxError, calls_helper_with_try, 1.5)
    _check_location(err, _line_of(_helper_with_try, "except ZeroDivisionError"), "except")


@pytest.mark.parametrize(("fn", "needle", "token"), [
    (uses_try, "except ValueError", "except"),
    (uses_with, "with ", "with"),
    (uses_async, "async def", "async"),
    (recursive_power, "x * recursive_power", "recursive_power"),
    (uses_frexp, "np.frexp", "np.frexp"),
], ids=["try", "with", "async", "recursion", "no-rule"])
def test_column_points_at_the_construct(fn, needle, token):
    exc = {uses_try: UnsupportedSyntaxError, uses_with: UnsupportedSyntaxError,
           uses_async: UnsupportedSyntaxError, recursive_power: RecursionNotSupportedError,
           uses_frexp: NoRuleError}[fn]
    args = (1.5, 3) if fn is recursive_power else (1.5,)
    err = _raises(exc, fn, *args)
    assert err.lineno == _line_of(fn, needle)
    if err.col is not None:  # col is 0-based into the file's line
        line = linecache.getline(THIS_FILE, err.lineno)
        assert line[err.col:].startswith(token), (err.col, line)


# ---------------------------------------------------------------------------
# Calls without a rule, recursion
# ---------------------------------------------------------------------------

def test_c_function_without_rule():
    err = _raises(NoRuleError, uses_frexp, 1.5)
    _check_location(err, _line_of(uses_frexp, "np.frexp"), "np.frexp")


@pytest.mark.skipif(_c_cbrt is None, reason="no C math library found")
def test_ctypes_function_without_rule():
    assert uses_ctypes_function(8.0) == 16.0  # runs fine under plain Python
    err = _raises(NoRuleError, uses_ctypes_function, 8.0)
    _check_location(err, _line_of(uses_ctypes_function, "_c_cbrt(x)"), "_c_cbrt")


def test_direct_recursion():
    err = _raises(RecursionNotSupportedError, recursive_power, 1.5, 3)
    _check_location(err, _line_of(recursive_power, "x * recursive_power"), "recursive_power")


def test_mutual_recursion():
    err = _raises(RecursionNotSupportedError, mutual_a, 0.5, 3)
    lines = {_line_of(mutual_a, "return mutual_b("), _line_of(mutual_b, "return mutual_a(")}
    _check_location(err, lines, "mutual_")


# ---------------------------------------------------------------------------
# Non-differentiable requests
# ---------------------------------------------------------------------------

def _check_runtime_location(err, fn):
    """Errors about argument values may lack a location; if given, it is in ``fn``."""
    if err.filename is not None:
        assert os.path.samefile(err.filename, THIS_FILE)
    if err.lineno is not None:
        lines, start = inspect.getsourcelines(fn)
        assert start <= err.lineno < start + len(lines)


@pytest.mark.parametrize("arg", [3, np.int64(3), np.arange(3), np.arange(6).reshape(2, 3)],
                         ids=["int", "np.int64", "int-array", "int-matrix"])
def test_integer_input(arg):
    err = _raises(NonDifferentiableError, square_sum, arg)
    assert re.search(r"int|float", str(err), re.IGNORECASE), str(err)
    _check_runtime_location(err, square_sum)


def test_integer_input_in_argnums_tuple():
    err = _raises(NonDifferentiableError, two_args, 1.5, 2, argnums=(0, 1))
    assert re.search(r"int|float", str(err), re.IGNORECASE), str(err)


def test_integer_argument_outside_argnums_is_fine():
    np.testing.assert_allclose(s2s.grad(power_with_int_exponent)(2.0, 3), 12.0)
    np.testing.assert_allclose(s2s.grad(recursive_power_free_twin)(2.0, 3), 12.0)


def recursive_power_free_twin(x, n):
    p = 1.0
    for _ in range(n):
        p = p * x
    return p


def test_non_scalar_output():
    err = _raises(NonDifferentiableError, elementwise_square, np.ones(3))
    assert "scalar" in str(err).lower(), str(err)
    _check_runtime_location(err, elementwise_square)


def test_non_scalar_output_value_and_grad():
    with pytest.raises(NonDifferentiableError):
        s2s.value_and_grad(elementwise_square)(np.ones((2, 2)))


# ---------------------------------------------------------------------------
# Bad API arguments
# ---------------------------------------------------------------------------

@pytest.mark.parametrize(("fn", "argnums", "args"), [
    (one_arg, 5, (1.5,)),
    (one_arg, (0, 5), (1.5,)),
    (two_args, 2, (1.5, 2.5)),
], ids=["5-of-1", "tuple-5-of-1", "2-of-2"])
def test_argnums_out_of_range(fn, argnums, args):
    with pytest.raises(ArgumentError) as info:
        s2s.grad(fn, argnums=argnums)(*args)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, S2SError)
    with pytest.raises(ArgumentError):
        s2s.value_and_grad(fn, argnums=argnums)(*args)


def test_error_hierarchy():
    for cls in (UnsupportedSyntaxError, NoRuleError, RecursionNotSupportedError,
                NonDifferentiableError):
        assert issubclass(cls, TransformError)
        assert issubclass(cls, S2SError)
    assert issubclass(ArgumentError, ValueError)
    assert issubclass(ArgumentError, S2SError)


# ---------------------------------------------------------------------------
# Lambdas: either correct or an error, never a wrong number
# ---------------------------------------------------------------------------

def _correct_or_transform_error(fn, x, expected):
    try:
        got = s2s.grad(fn)(x)
    except TransformError:
        return
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_lambda_passed_directly():
    _correct_or_transform_error(lambda x: x ** 2, 3.0, 6.0)


def test_two_lambdas_on_one_line():
    # inspect.getsource gives the whole line for both: the second must not be
    # mistaken for the first
    _correct_or_transform_error(_square_inline, 2.0, 4.0)
    _correct_or_transform_error(_cube_inline, 2.0, 12.0)


def test_two_lambdas_defined_inline_in_a_call():
    f, g = (lambda x: x * 2.0), (lambda x: x * 3.0)
    _correct_or_transform_error(g, 1.0, 3.0)
    _correct_or_transform_error(f, 1.0, 2.0)


def test_lambdas_from_a_comprehension_keep_their_defaults():
    for k, fn in enumerate(_multipliers, start=1):
        _correct_or_transform_error(fn, 1.0, float(k))


# ---------------------------------------------------------------------------
# Positive controls
# ---------------------------------------------------------------------------

def test_reading_a_global_is_fine():
    np.testing.assert_allclose(s2s.grad(reads_global)(2.0), 12.0)


def test_bad_functions_run_under_plain_python():
    assert uses_try(2.0) == 4.0
    assert uses_with(1.0) == 0.0
    assert list(uses_yield(1.0)) == [2.0]
    assert recursive_power(2.0, 3) == 8.0
    assert uses_frexp(4.0) == 2.0


def _sine_sum(x):
    return np.sum(np.sin(x))


@pytest.mark.parametrize("primals, tangents", [
    (np.array([0.1, 0.2]), np.array([1.0, 0.0])),      # arrays, not tuples of arrays
    (0.5, 1.0),                                          # numbers
    ((np.array([0.1, 0.2]),), np.array([1.0, 0.0])),    # tangents alone untupled
], ids=["arrays", "numbers", "tangents"])
def test_jvp_with_untupled_primals_says_to_tuple_them(primals, tangents):
    """s2s.jvp(f, x, t) said "argnums=1 is out of range" (x's rows taken for arguments)."""
    with pytest.raises(ArgumentError, match=r"as a tuple, one entry per argument .*s2s\.jvp\(f, \(x,\), \(t,\)\)"):
        s2s.jvp(_sine_sum, primals, tangents)
    value, tangent = s2s.jvp(_sine_sum, (np.array([0.1, 0.2]),), (np.array([1.0, 0.0]),))
    assert tangent == pytest.approx(np.cos(0.1))
