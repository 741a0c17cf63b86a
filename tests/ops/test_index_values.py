"""A value used as an index that depends on a differentiated input is refused, never a zero."""

import pytest


from cases import index_cases as I
import s2s  # noqa: E402


@pytest.mark.parametrize("transform", ["grad", "jvp", "vjp"])
def test_index_carrying_a_derivative_is_refused(transform):
    run = {"grad": lambda: s2s.grad(I.through_getitem)(1.5),
           "jvp": lambda: s2s.jvp(I.through_getitem, (1.5,), (1.0,)),
           "vjp": lambda: s2s.vjp(I.through_getitem, 1.5)[1](1.0)}[transform]
    with pytest.raises(s2s.NonDifferentiableError, match="through an index") as info:
        run()
    assert info.value.filename == I.__file__


def test_integer_indices_stay_differentiable():
    # int(x) carries no derivative: indexing with it is fine, the product rule sees x only
    assert s2s.grad(I.integer_index_of_a_value)(2.5) == pytest.approx(2.0)
