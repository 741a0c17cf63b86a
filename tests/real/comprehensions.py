"""Comprehensions and generator expressions over parameters and data: nested list
comprehensions with if, np.array/np.stack of a comprehension, generator unpacking,
augmented division on a fresh array."""
import numpy as np


def coulomb_energy(pos, charges):
    n = len(pos)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    energies = [charges[i] * charges[j] / np.linalg.norm(pos[i] - pos[j]) for i, j in pairs]
    return sum(energies)


def make_coulomb_args(seed=0):
    rng = np.random.default_rng(3700 + seed)
    return rng.standard_normal((4, 3)), np.array([1.0, -1.0, 2.0, -0.5])


def conv1d_loss(kernel, signal, target):
    k = len(kernel)
    windows = np.array([signal[i:i + k] for i in range(len(signal) - k + 1)])
    out = windows @ kernel[::-1]
    return np.sum((out - target) ** 2)


def make_conv_args(seed=0):
    rng = np.random.default_rng(3800 + seed)
    return rng.standard_normal(3), rng.standard_normal(8), rng.standard_normal(6)


def attention_loss(params, x):
    Wq, Wk, Wv = (params[k] for k in ("q", "k", "v"))
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.T / np.sqrt(q.shape[-1])
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    out = weights @ v
    return (out ** 2).mean()


def make_attention_args(seed=0):
    rng = np.random.default_rng(91)
    params = {name: rng.standard_normal((3, 2)) for name in "qkv"}
    return params, np.random.default_rng(3900 + seed).standard_normal((4, 3))


def poly_features_loss(w, x, y, degree=3):
    feats = np.stack([x ** k for k in range(1, degree + 1)] + [np.sin(x), np.cos(x)], axis=1)
    pred = feats @ w
    residuals = [p - t for p, t in zip(pred, y) if np.isfinite(t)]
    return sum(r ** 2 for r in residuals) / len(residuals) + 1e-2 * sum(wi ** 2 for wi in w)


def make_features_args(seed=0):
    w = np.random.default_rng(92).standard_normal(5)
    rng = np.random.default_rng(4000 + seed)
    x = rng.uniform(-1, 1, size=6)
    y = np.cos(3 * x)
    y[2] = np.nan                 # a missing label, skipped by the comprehension's `if`
    return w, x, y


def l2_of_nested(params, x):
    """params: {"layer0": {"W": ..., "b": ...}, "layer1": {...}}"""
    h = x
    for name in sorted(params):
        layer = params[name]
        h = np.tanh(h @ layer["W"] + layer["b"])
    penalty = sum(sum(np.sum(p ** 2) for p in layer.values()) for layer in params.values())
    squares = {name: np.sum(layer["W"] ** 2) for name, layer in params.items()}
    return np.sum(h ** 2) + 1e-2 * penalty + 1e-3 * max(squares.values())


def make_nested_args(seed=0):
    rng = np.random.default_rng(93)
    params = {"layer0": {"W": rng.standard_normal((3, 3)), "b": rng.standard_normal(3)},
              "layer1": {"W": 2.0 * rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}}
    return params, np.random.default_rng(4100 + seed).standard_normal((2, 3))


CASES = [
    dict(name="coulomb_energy", fn=coulomb_energy, args=make_coulomb_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(0, None),
         constructs="nested list comprehension of index pairs, list comprehension with tuple target, "
                    "np.linalg.norm of a difference, builtin sum of a list of scalars"),
    dict(name="conv1d_listcomp", fn=conv1d_loss, args=make_conv_args, argnums=(0, 1),
         checks=("grad", "jit", "vmap"), in_axes=(0, 0, 0),
         constructs="np.array of a list comprehension of slices, kernel[::-1], len() of an argument"),
    dict(name="attention_genexp", fn=attention_loss, args=make_attention_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0),
         constructs="generator expression unpacked into three names, tuple assignment of three "
                    "products, k.T, x.max/x.sum(keepdims), `/=` on a fresh array, (..).mean()"),
    dict(name="poly_features_comp", fn=poly_features_loss, args=make_features_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0, 0),
         constructs="list comprehension + list concatenation inside np.stack, comprehension over "
                    "zip(pred, y) with an if filter, sum of generator expressions, len of a list"),
    dict(name="nested_dict_comprehensions", fn=l2_of_nested, args=make_nested_args, argnums=0,
         checks=("grad", "jit", "vmap"), in_axes=(None, 0),
         constructs="for over sorted(dict), nested dict params, nested generator expressions over "
                    ".values(), dict comprehension, max() of dict values"),
]
