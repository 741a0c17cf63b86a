"""Higher-order derivatives: s2s differentiates the code it generated.

`s2s.grad(f)` is a Python function whose source s2s wrote to a real file
using only operations that have rules, so `s2s.grad(s2s.grad(f))` simply
transforms that file again.  Here we take the third derivative of np.tanh and
the second derivative of a user function, and compare with closed forms.

Run it with `python examples/higher_order.py`.
"""
import numpy as np

import s2s


def f(x):
    return x * np.sin(x) + np.exp(-x * x)


def main():
    x = np.linspace(-2.0, 2.0, 5)

    # d^3/dx^3 tanh(x) = -2 (1 - t^2) (1 - 3 t^2), t = tanh(x); elementwise via a loop.
    d3tanh = s2s.grad(s2s.grad(s2s.grad(np.tanh)))
    got = np.array([d3tanh(float(xi)) for xi in x])
    t = np.tanh(x)
    want = -2.0 * (1.0 - t * t) * (1.0 - 3.0 * t * t)
    print(f"tanh'''(x)  s2s  = {got}")
    print(f"tanh'''(x)  exact= {want}")
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)

    # f''(x) = 2 cos(x) - x sin(x) + (4 x^2 - 2) exp(-x^2)
    d2f = s2s.grad(s2s.grad(f))
    got = np.array([d2f(float(xi)) for xi in x])
    want = 2.0 * np.cos(x) - x * np.sin(x) + (4.0 * x * x - 2.0) * np.exp(-x * x)
    print(f"f''(x)      s2s  = {got}")
    print(f"f''(x)      exact= {want}")
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)

    print()
    print("Source of grad(grad(f)) -- the gradient of the generated gradient:")
    print()
    print(s2s.grad(f).source)
    print(s2s.grad(s2s.grad(f)).source)


if __name__ == "__main__":
    main()
