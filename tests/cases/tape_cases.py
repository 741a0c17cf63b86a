"""Programs whose compiled (typed-tape) gradients once read wrong values back in the backward
sweep: each overwrites an argument, in a loop, a branch or nested loops.  s2s reads their
sources from this file (tests/jit/test_jit_tapes.py)."""
import numpy as np


def iterpower(a, n):
    # a ** (2 ** n), a reassigned argument: jit(grad) gave 33.408 for 4 a**3 = -19.652 at a = -1.7, n = 2
    for i in range(n):
        a = a * a
    return a


def branch_reassigns_argument(x, c):
    if c > 0.0:
        x = x * x
    else:
        x = x * 3.0
    return x * x


def nested_loops_overwrite_argument(x):
    for i in range(3):
        for j in range(2):
            x = np.sin(x) * x
    return x


def array_argument_overwritten(x, n):
    for i in range(n):
        x = np.tanh(x) * x + 0.1
    return np.sum(x * x)


def second_argument_overwritten(x, w):
    for i in range(3):
        w = w * x + np.cos(w)
    return np.sum(w)


def while_overwrites_argument(x):
    while x < 10.0:
        x = x * 1.5 + 0.1 * x * x
    return x


def break_after_overwrite(x):
    for i in range(10):
        x = x * 1.1 + 0.01 * x * x
        if x > 3.0:
            break
    return x


def argument_overwritten_before_and_in_loop(x):
    x = x * 2.0
    s = 0.0
    for i in range(4):
        s = s + x * x
        x = np.sin(x)
    return s + x


def self_assignment(x, y):
    # found by tests/reverse/test_random_programs.py: `x = x` reset x's cotangent (grad was 0)
    x = x
    return np.sum(y) + np.sum(x * x)


def argument_reassigned_twice(x, y):
    # found by the random-program tests: jit(grad) w.r.t. y gave 1.8 for 2 y = 1.0 (the dead
    # restore of y's second value was dropped, so the first restore read the wrong tape entry)
    v = y * y
    y = x * 3.0
    y = x * 2.0
    return np.sum(v)


def scalar_argument_reassigned_in_loop(x):
    # found by the random-program tests: jit(grad) 18.18 for 13.99
    for i in range(2):
        x = x + 1.0
        x = x * x
    return x
