"""Class-based models: `s2s.grad(model.loss)` on bound methods reading attributes of self,
a @staticmethod, a @property, a @classmethod constructor, a lambda stored on self, a counter
attribute updated on every call, `self(...)` through __call__, a frozen dataclass config
passed as a plain argument, and a dataclass layer differentiated as a pytree."""
from dataclasses import dataclass

import numpy as np


class LinearRegression:
    def __init__(self, l2=0.1, fit_intercept=True):
        self.l2 = l2
        self.fit_intercept = fit_intercept

    @property
    def penalty_scale(self):
        return 0.5 * self.l2

    @staticmethod
    def _design(X):
        return np.hstack([X, np.ones((X.shape[0], 1))])

    def predict(self, w, X):
        A = self._design(X) if self.fit_intercept else X
        return A @ w

    def loss(self, w, X, y):
        r = self.predict(w, X) - y
        return 0.5 * np.mean(r ** 2) + self.penalty_scale * np.sum(w ** 2)


LINEAR = LinearRegression(l2=0.2)


def make_linear_args(seed=0):
    w = np.random.default_rng(71).standard_normal(4)
    rng = np.random.default_rng(2400 + seed)
    return w, rng.standard_normal((6, 3)), rng.standard_normal(6)


class TwoLayerNet:
    def __init__(self, sizes, activation="tanh"):
        self.sizes = sizes
        self.act = {"tanh": np.tanh, "sigmoid": lambda z: 1.0 / (1.0 + np.exp(-z))}[activation]
        self.n_evals = 0

    @classmethod
    def from_config(cls, cfg):
        return cls(cfg["sizes"], activation=cfg.get("activation", "tanh"))

    def forward(self, params, x):
        h = self.act(x @ params["W1"] + params["b1"])
        return h @ params["W2"] + params["b2"]

    def __call__(self, params, x):
        return self.forward(params, x)

    def loss(self, params, x, y):
        self.n_evals += 1
        out = self(params, x)
        return np.mean((out - y) ** 2)


NET = TwoLayerNet.from_config({"sizes": (2, 3, 1), "activation": "sigmoid"})


def make_net_args(seed=0):
    rng = np.random.default_rng(72)
    n_in, n_hidden, n_out = NET.sizes
    params = {"W1": rng.standard_normal((n_in, n_hidden)), "b1": 0.1 * rng.standard_normal(n_hidden),
              "W2": rng.standard_normal((n_hidden, n_out)), "b2": 0.1 * rng.standard_normal(n_out)}
    data = np.random.default_rng(2500 + seed)
    return params, data.standard_normal((5, n_in)), data.standard_normal((5, n_out))


@dataclass(frozen=True)
class TrainConfig:
    l2: float = 1e-3
    huber_delta: float = 1.0
    reduction: str = "mean"


def huber_regression_loss(w, X, y, cfg=TrainConfig()):
    r = X @ w - y
    a = np.abs(r)
    quad = np.minimum(a, cfg.huber_delta)
    lin = a - quad
    per_example = 0.5 * quad ** 2 + cfg.huber_delta * lin
    loss = per_example.mean() if cfg.reduction == "mean" else per_example.sum()
    return loss + cfg.l2 * (w @ w)


def make_huber_args(seed=0):
    w = np.random.default_rng(73).standard_normal(3)
    rng = np.random.default_rng(2600 + seed)
    return w, rng.standard_normal((8, 3)), 2.0 * rng.standard_normal(8), TrainConfig(l2=0.01, reduction="sum")


@dataclass
class Affine:
    W: np.ndarray
    b: np.ndarray

    def __call__(self, x):
        return x @ self.W + self.b


def affine_loss(layer, x, y):
    return np.mean((np.tanh(layer(x)) - y) ** 2)


def make_affine_args(seed=0):
    rng = np.random.default_rng(74)
    layer = Affine(W=rng.standard_normal((3, 2)), b=0.1 * rng.standard_normal(2))
    data = np.random.default_rng(2700 + seed)
    return layer, data.standard_normal((5, 3)), data.standard_normal((5, 2))


CASES = [
    dict(name="LinearRegression.loss", fn=LINEAR.loss, args=make_linear_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="bound method, self attributes, @property, @staticmethod called via self, "
                    "conditional expression on a self flag, np.hstack of a list"),
    dict(name="TwoLayerNet.loss", fn=NET.loss, args=make_net_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="bound method built by a @classmethod, lambda stored on self and called, "
                    "`self.n_evals += 1` counter, self(...) via __call__, dict params"),
    dict(name="huber_regression_loss", fn=huber_regression_loss, args=make_huber_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0, None),
         constructs="frozen dataclass config as a non-differentiated argument (and as a default), "
                    "attribute reads cfg.x, string comparison, per.mean()/per.sum() chosen by a flag"),
    dict(name="affine_loss", fn=affine_loss, args=make_affine_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="dataclass argument differentiated as a pytree, called through its __call__ method"),
]
