"""Checks shared by the tests of function values and lists (tests/frontend/test_closures_*.py).

Each program is checked against central finite differences under `s2s.grad`, `s2s.jvp` (FD
directional derivative), `s2s.vmap(s2s.grad(f))` (a Python loop of grads) and
`s2s.jit(s2s.grad(f))`; a refusal must be a TransformError at a line of the file that defines
the program. `rand` draws from a generator the autouse fixture `seed_per_test` reseeds from each
test's name, so a test draws the same numbers whatever runs before it (pytest-xdist, -k).
"""
import inspect
import os
import zlib

import numpy as np
import pytest

import s2s
from s2s.errors import SharedArrayError, TransformError
from cases.fd import assert_close, numeric_grad

_rng = np.random.default_rng(20261206)


def rand(*shape):
    return _rng.standard_normal(shape)


@pytest.fixture(autouse=True)
def seed_per_test(request):
    """Each test draws the same numbers whatever runs before it (pytest-xdist, -k)."""
    global _rng
    _rng = np.random.default_rng(zlib.crc32(request.node.name.encode()))


# the MLPs' layer sizes (test_closures_models.py) and the dict model's (test_closures_binding.py)
SIZES = [(4, 5), (5, 3), (3, 1)]


def n_params():
    return sum(m * n + n for m, n in SIZES)


def _file_of(f):
    return os.path.abspath(inspect.getsourcefile(f))


def check_grad(f, args, argnum=0, rtol=1e-6, atol=1e-7):
    """s2s.grad(f, argnum) against central finite differences; returns the s2s gradient."""
    before = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    got = s2s.grad(f, argnums=argnum)(*args)
    for b, a in zip(before, args):
        if isinstance(b, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg="grad modified its argument")
    want = numeric_grad(f, args, argnum)
    assert_close(got, want, rtol=rtol, atol=atol, what=f"grad of {f.__name__}")
    return got


def check_value(f, args):
    """The value s2s computes (value_and_grad) is the value Python computes."""
    val, _ = s2s.value_and_grad(f)(*args)
    np.testing.assert_allclose(val, f(*args), rtol=1e-12, atol=1e-12)


def check_jvp(f, args, rtol=1e-5, atol=1e-7, seed=0):
    """s2s.jvp with random tangents for every argument against the FD directional derivative."""
    rng = np.random.default_rng(seed)
    tangents = tuple(rng.standard_normal(np.shape(a)) if isinstance(a, np.ndarray) else float(rng.standard_normal())
                     for a in args)
    out, tout = s2s.jvp(f, tuple(args), tangents)
    np.testing.assert_allclose(out, f(*args), rtol=1e-12, atol=1e-12)
    h = 1e-6
    plus = [a + h * t for a, t in zip(args, tangents)]
    minus = [a - h * t for a, t in zip(args, tangents)]
    want = (np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * h)
    assert_close(tout, want, rtol=rtol, atol=atol, what=f"jvp of {f.__name__}")


def check_vmap_grad(f, batch, others=(), argnum=0):
    """vmap(grad(f)) over the leading axis of `batch` (argument `argnum`) against a loop of grads."""
    n_args = len(others) + 1
    in_axes = tuple(0 if i == argnum else None for i in range(n_args))

    def call_args(b):
        rest = list(others)
        rest.insert(argnum, b)
        return rest

    got = s2s.vmap(s2s.grad(f, argnums=argnum), in_axes=in_axes)(*call_args(batch))
    want = np.stack([s2s.grad(f, argnums=argnum)(*call_args(b)) for b in batch])
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    # and the per-example gradients are right, not just consistent
    fd0 = numeric_grad(f, call_args(batch[0]), argnum)
    assert_close(want[0], fd0, rtol=1e-6, atol=1e-7, what="per-example grad")


def check_jit_grad(f, args, argnum=0):
    got = s2s.jit(s2s.grad(f, argnums=argnum))(*args)
    want = s2s.grad(f, argnums=argnum)(*args)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)


def lines_marked(f, marker="# <- refused"):
    """Absolute line numbers in its file of the lines of `f` carrying `marker`."""
    src, start = inspect.getsourcelines(f)
    return {start + i for i, line in enumerate(src) if marker in line}


def check_right_or_refused(f, args, argnum=0):
    """Either the value and gradient are right, or s2s refuses with an error at a line of f's file.

    The xfail tests of wrong answers use it: s2s refusing such a program is a fix too."""
    this_file = _file_of(f)
    try:
        val, g = s2s.value_and_grad(f, argnums=argnum)(*args)
    except TransformError as err:                           # refused when s2s reads it
        assert err.filename is not None and os.path.abspath(err.filename) == this_file, str(err)
        assert err.lineno is not None, str(err)
        return
    except SharedArrayError as err:                         # refused when it runs, at the user's line
        text = str(err) + "\n".join(getattr(err, "__notes__", []))
        assert f'File "{this_file}", line' in text, text
        return
    np.testing.assert_allclose(val, f(*args), rtol=1e-12, atol=1e-12, err_msg=f"value of {f.__name__}")
    assert_close(g, numeric_grad(f, args, argnum), rtol=1e-6, atol=1e-7, what=f"grad of {f.__name__}")


def check_refused(f, args, transform=None):
    """s2s refuses `f` with a TransformError at one of its lines marked `# <- refused`."""
    transform = transform or s2s.grad
    lines = lines_marked(f)
    assert lines, "test bug: no line marked as refused"
    with pytest.raises(TransformError) as info:
        transform(f)(*args)
    err = info.value
    msg = str(err)
    assert err.filename is not None and os.path.abspath(err.filename) == _file_of(f), msg
    assert err.lineno in lines, f"error at line {err.lineno}, expected one of {sorted(lines)}:\n{msg}"
    assert f'File "{err.filename}", line {err.lineno}' in msg
    return err
