"""Minimal programs from failures the random-program tests found (tests/reverse/test_random_programs.py).

Each is a module-level function so s2s can read its source; the test that uses it says which
property failed and how.
"""
import numpy as np


def self_assignment(x, y):
    # grad w.r.t. x is ones; s2s gave zeros (fixed)
    x = x
    return np.sum(y) + np.sum(x)


def self_assignment_local(x):
    z = x
    z = z
    return z * 2.0


def rebind_written_array(x, y):
    # refused: "`out` may alias another array", although the written array is np.zeros(2)
    out = np.zeros(2)
    out[0] = x
    s = np.sum(out)
    out = y
    return s + np.sum(out)


def reassign_unbatched_argument(x, y):
    # vmap(in_axes=(0, None)): y is not batched; after `y = x * y` it is
    y = x * y
    return np.sum(y)


def reassign_unbatched_argument_in_branch(x, y):
    if x > 0.6:
        y = y * 2.0
    return np.sum(y) + x


def reassign_unbatched_argument_in_loop_not_run(x, y):
    k = 0
    while 0.7 < 0.6 and k < 2:
        k = k + 1
        y = y * x
    return np.sum(y)


def reassign_unbatched_argument_unbatched_branch(x, y):
    # both branches give x an unbatched value, then y = y * x reassigns the unbatched argument
    if np.sum(y) > 0.25:
        x = np.mean(y)
    else:
        x = np.sum(y) * 2.0
    for i in range(2):
        y = y * x
    return np.sum(y)


def early_return_unbatched_condition(x, y):
    # vmap(grad): the backward sweep of the code after the return pops a tape never pushed
    if y > 0.6:
        return np.sum(x)
    x = np.sin(x)
    return np.sum(x)


def view_of_array_rebuilt_in_loop(x):
    # refused: "`t1` refers to (a view of) `out`, which is written into later", though `out`
    # is a new np.zeros(2) in every iteration
    s = 0.0
    for i in range(2):
        out = np.zeros(2)
        out[0] = x
        s = s + np.sum(out[::-1])
    return s


def _fill(a):
    out = np.zeros(2)
    out[0] = a
    return out[::-1] * 2.0


def view_of_helper_array_in_loop(x):
    s = 0.0
    for i in range(2):
        s = s + np.sum(_fill(x))
    return s


def jit_fused_sum_of_scalar(x, y):
    # jit(f) with a scalar y and an array x: the fused loop adds y to np.sum(y) once per element
    z = y + x
    return np.sum(y) + np.sum(z)


def scalar_argument_reassigned_in_loop(x):
    # jit(grad), scalar x (fixed): `x = x + 1.0` pushed x on the typed tape, its adjoint popped nothing,
    # so the adjoint of `x = x * x` read the wrong iteration's value
    for i in range(2):
        x = x + 1.0
        x = x * x
    return x


def other_scalar_argument_reassigned_in_loop(x, y):
    for i in range(2):
        y = y * x
        y = y + 1.0
    return np.sum(y)


def argument_reassigned_twice(x, y):
    # jit(grad) w.r.t. y was 2 * (3 x) where 2 y is right (the adjoint of v = y * y restores the
    # value of the first reassignment instead of y's entry value); no loop needed
    v = y * y
    y = x * 3.0
    y = x * 2.0
    return np.sum(v)


def rebind_written_array_to_expression(x, y):
    out = np.zeros(2)
    out[0] = x
    out = out * 2.0
    return np.sum(out)


def augmented_assignment_to_written_array(x, y):
    out = np.zeros(2)
    out[0] = x
    out -= 2.0 * x
    return np.sum(out)


def jit_fused_sum_into_operand(x, y):
    # jit(f): `y_e = 0.0` (the accumulator) and `y_e = elem(y_flat, i)` (y's element) in one loop
    y = np.sum(x * y)
    return y


def _self_assignment_in_else(a, b):
    if a[2] * b < 0.25:
        v = -b
    else:
        b = b
    return b


def helper_self_assignment_in_branch(x, y):
    # vmap(grad): AttributeError 'Pass' object has no attribute 'value' (s2s/transforms/batching.py)
    x = _self_assignment_in_else(y, x)
    return np.sum(y) - 0.3 * x


def _first(a):
    return a[0] * 2.0


def array_rebuilt_in_loop_passed_to_helper(x):
    # refused: "`a__first` refers to (a view of) `out`, which is written into later"
    s = 0.0
    for i in range(2):
        out = np.zeros(2)
        out[0] = x
        s = s + _first(out)
    return s


def view_then_rebound(x):
    # a view of `out`, then `out` bound to a new array and written: the view's array is not
    # written again (was refused as "written into later")
    out = np.zeros(2)
    out[0] = x
    v = out[::-1]
    out = np.zeros(2)
    out[1] = x * 3.0
    out[0] = x * x
    return np.sum(v * out) + np.sum(v)


def view_carried_to_next_iteration(x):
    prev = np.ones(2)
    s = 0.0
    for i in range(3):
        out = np.zeros(2)
        out[0] = x * (i + 1.0)
        out[1] = np.sin(x) + prev[0]
        s = s + np.sum(prev * out)
        prev = out[::-1]
    return s + np.sum(prev)


def _recurrence(a, b):
    out0 = np.zeros(4)
    out0[0] = b
    for i1 in range(1, 4):
        out0[i1] = -0.7 * out0[i1 - 1] + b
    return out0


def helper_array_returned_in_loop(x, y):
    # found by the random-program tests (float32 stream): the helper's written array, returned
    # whole and inlined in a loop, was refused as a view written into later
    x = ((x - x) / (1.0 + x * x))
    for i2 in range(2):
        y = np.tanh(_recurrence((x * y), 0.1))
    x = np.sum(_recurrence(y, x))
    x = np.sum(_recurrence((y + y), x))
    return np.sum(y) + np.sum(x)


def rebound_only_in_branch(x):
    # `out` is made anew only when x > 0: the view may see a later write, still refused
    out = np.zeros(2)
    s = 0.0
    for i in range(2):
        if x > 0:
            out = np.zeros(2)
        out[0] = x * (i + 1.0)
        s = s + np.sum(out[::-1])
    return s


def write_after_rebinding_to_argument(x, y):
    # `out` is y (the caller's array) when written: still refused
    out = np.zeros(2)
    out[0] = x
    out = y
    out[1] = x
    return np.sum(out)


def argument_overwritten_by_a_constant(x, y):
    # found by the soak (hessian): x's tangent is pushed, then x is set to a constant, whose zero
    # tangent went on the same tape; vmap of the jvp took that pop for batched (IndexError in balign)
    x = np.sum(np.sqrt(1.0 + np.linspace(-0.9, 0.1, 4) * np.linspace(-0.9, 0.1, 4)))
    x = ((x - np.sin(0.5)) - (np.maximum(y, -0.35) * x))
    return np.sum(y) + -0.3 * np.sum(x)


def written_array_renamed_in_inner_loop(x, y):
    # found by the soak: `out2 = np.tanh(out2)` (a temporary renamed, in A-normal form) made `out2`
    # look as if it might alias another array, and the write `out2[0] = ...` was refused
    k1 = 0
    while np.mean(x) < 1.0 and k1 < 5:
        k1 = k1 + 1
        out2 = np.zeros(2)
        out2[0] = y * x[1]
        k3 = 0
        while y < 1.0 and k3 < 1:
            k3 = k3 + 1
            out2 = np.tanh(out2)
        x = x + 0.1 * out2
    return np.sum(x) + y


def _early_return_on_constant(a, b):
    b = (-b)
    if (b * b) < 0.25:
        return np.cos(np.tanh(a))
    b = b
    return np.cos((a / (1.0 + a * a)))


def early_return_on_constant_after_write(x, y):
    # found by the soak (vmap(grad)): the helper's branch flag went on the tape beside a written
    # array's saved slot; vmap took the flag for batched and ran the backward of the branch the
    # forward sweep skipped (UnboundLocalError)
    out0 = np.zeros(2)
    out0[0] = -0.2
    out0 = _early_return_on_constant(x, 0.3)
    return np.sum(y) + -0.3 * np.sum(out0)


def _scaled_second(a, b):
    return 2.0 * b + 0.0 * np.sum(a)


def array_rebuilt_after_continue_passed_to_helper(y):
    # found by the soak (seed 1): refused, "`a__scaled_second` refers to (a view of) `out`, which is
    # written into later", though `out` is a new np.zeros(2) in every iteration (the `continue`
    # before it is what the aliasing check does not see through)
    for i in range(2):
        if i < 1:
            continue
        out = np.zeros(2)
        out[0] = y
        out[1] = y * y
        y = _scaled_second(out, out[i])
    return y


def write_then_rebind(x, y):
    # hessian refused: "`out` may alias another array" in the generated gradient, whose reverse sweep
    # starts with `out = None` (fixed: None holds no array)
    out = np.zeros(3)
    out[0] = y * x
    out = np.sin(out)
    return np.sum(out)


def write_then_rebind_in_loop(x, y):
    out = np.zeros(3)
    out[0] = y * x
    for i in range(2):
        out = np.sin(out)
    return np.sum(out)


def write_self_assign_then_rebind(x, y):
    out = np.zeros(3)
    out[0] = y * x
    out = out
    out = np.sin(out)
    return np.sum(out)


def number_restored_beside_an_array(x, y):
    # jit(grad, argnums=(0, 1)) with x a number and y an array: the backward sweep's fused loop over
    # y's elements also restored x (`x = x_entry`) and made it an array of y's shape, so dx came back
    # with shape (4,) (fixed: an output of numbers only keeps the loop from running, transforms/fuse.py)
    x = _where_mean(np.sin(x), x)
    return np.sum(y) + np.sum(x)


def _where_mean(a, b):
    k0 = 0
    while (a ** 2) < 0.0 and k0 < 2:
        k0 = k0 + 1
        a = np.tanh(a)
        a = np.tanh(a)
    return np.mean(np.where(a > 0.1, a, np.linspace(-0.9, -0.4, 4)))


def _scratch_then_rebind(b):
    out = np.zeros(2)
    for i in range(2):
        out[i] += np.sum(b) * b[i]
    out = b
    return np.sum(out ** 2)


def scratch_rebound_in_helper_called_in_loop(x):
    # grad refused ("`out` may alias another array"): the helper's scratch array is rebound to its
    # argument after its writes, and the next pass of the loop writes into a new np.zeros again
    s = 0.0
    for k in range(2):
        s = s + _scratch_then_rebind(x * (k + 1.0))
    return s


def scratch_rebuilt_after_continue_viewed(x, y):
    # grad refused ("`t38` refers to (a view of) `out2`, which is written into later")
    for i0 in range(1):
        for i1 in range(2):
            if i1 == 1:
                continue
            out2 = np.zeros(2)
            for i3 in range(2):
                out2[i3] = np.log(1.0 + np.tanh(x[i0]) * np.tanh(x[i0]))
            out2 = np.log(1.0 + x * x)
            y = y + np.sin(np.mean(out2[::-1])) * x[0]
    return 0.5 * np.sum(y)


def in_place_on_a_number_alias(x, y):
    v = x
    v *= np.tanh(np.sum(y))
    return np.sum(y) + x + v


# Aliasing the flow-sensitive check must still refuse (a write changes another name's array)
def rebound_to_argument_in_a_branch(x, c):
    out = np.zeros(3)
    for k in range(2):
        if c > 0.0:
            out = x
        out[k] = out[k] * 2.0
    return np.sum(out) + np.sum(x)


def rebound_to_argument_at_loop_end(x):
    out = np.zeros(3)
    for k in range(2):
        out[k] = x[k] * 2.0
        out = x
    return np.sum(out) + np.sum(x)


def view_kept_across_a_conditional_rebuild(x, c):
    out = np.zeros(3)
    v = out[1:]
    if c > 0.0:
        out = np.zeros(3)
    out[1] = x[0]
    return np.sum(v * x[1:]) + np.sum(out)


def view_rebind_after_writes(x, y):
    # hessian refused ("`out` may alias another array" in the generated gradient): the reverse sweep
    # undoes `out = out[::-1]` inside its replay of the loop, which the check cannot tell runs
    out = np.ones(3)
    out[0] = y * x
    for i in range(1):
        if np.sum(out) > 10.0:
            break
        out = out[::-1]
    return np.sum(out * np.arange(3.0)) * x


def alias_in_one_branch_then_updated(x, y):
    # vmap with examples on both branches was silently wrong: the branches' values were merged per
    # example by np.where, a new array, so `v += ...` no longer changed x on the examples where v is x
    # (as NumPy does); fixed: such an update makes vmap run its per-example loop
    x = x * 1.0 - np.maximum(x, 0.6)
    if np.sum(x) > -2.0:
        v = np.sum(y) + 0.0 * x
    else:
        x = y * 2.0
        v = x
    v += y + x
    return np.sum(v) + np.sum(x)


def generator_made_under_a_batched_condition(x, y):
    # vmap gave each example other draws: the Generator made in a branch taken per example was
    # repeated along the batch, one object each example drew from in turn, where each call of f
    # makes its own; fixed: such a value makes vmap run its per-example loop
    if np.sum(x + np.linspace(0.1, 0.3, 4)) > -0.35:
        x = np.sum(np.random.default_rng(0).normal(0.0, 0.5, 4)) + x
    else:
        x = np.sum(np.random.default_rng(1).normal(0.0, 0.5, 4) * x)
    return np.sum(x) + y


def constant_returned_early_in_a_loop(x, y):
    # jvp: `result_dot` unbound after the loop when the early return (tangent zero) was taken
    for _ in range(1):
        if np.sum(y) < 0.6:
            return 0.7
    return np.sum(y * x)


def draw_rebinds_argument(x, y):
    # grad refused `x = rng.normal(...)` ("a value that depends on the differentiated arguments
    # flows into it"), though nothing does (`v = rng.normal(...); x = v` was differentiated)
    x = np.sin(x)
    x = np.random.default_rng(0).normal(0.0, 0.5, 3)
    return np.sum(x) + y


def argument_returned_early_in_a_loop(x, y, scale=0.7):
    # jvp: `return scale` (no tangent) in a loop left result_dot unbound, as `return 0.7` did
    for i1 in range(1):
        if np.sum(y) < 0.6:
            return scale
    y = np.tanh(y[1] / (1.0 + x[1] * x[1])) + x
    return np.sum(scale) + np.sum(y)
