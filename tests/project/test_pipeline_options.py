"""The pipeline's options record and stages: the caches are keyed by the same (name, value) pairs the
callers passed as tuples before the record existed (entries on disk stay valid), and each backend
runs its own list of stages."""
from s2s.pipeline import NUMBA_STAGES, PYTHON_STAGES, STAGES, inline_options
from s2s.pipeline_options import GenerateOptions

JIT = dict(backend="numba", target="cpu", cache=True, tapes="per_variable", fuse=True, error_model="numpy")
JIT_KEY = (("backend", "numba"), ("target", "cpu"), ("cache", True), ("tapes", "per_variable"), ("fuse", True),
           ("error_model", "numpy"))
VMAP_KEY = (("in_axes", (0, None)), ("out_axes", 0), ("axis_size", None))


def test_plain_transforms_are_keyed_by_nothing():
    assert GenerateOptions().key() == ()


def test_vmap_is_keyed_by_its_axes():
    assert GenerateOptions(in_axes=(0, None), out_axes=0, axis_size=None).key() == VMAP_KEY


def test_typed_tapes_alone():
    assert GenerateOptions(tapes="per_variable").key() == (("tapes", "per_variable"),)
    assert inline_options() is None     # (outside a compiled build: a transform's own options)
    facts = ((1, "f"),)
    assert GenerateOptions(tapes="per_variable", arg_facts=facts).key() == \
        (("tapes", "per_variable"), ("arg_facts", facts))


def test_jit_forms():
    facts = ((1, "f"), (0, "f"))
    assert GenerateOptions(**JIT).key() == JIT_KEY
    assert GenerateOptions(**JIT, arg_facts=facts).key() == JIT_KEY + (("arg_facts", facts),)
    assert GenerateOptions(**{**JIT, "fuse": False}).key() == \
        JIT_KEY[:4] + (("fuse", False), ("error_model", "numpy"))
    # a compiled vmap: its axes and the facts its rows are fused on, even when there are none
    for param_facts in (None, facts):
        assert GenerateOptions(**JIT, in_axes=(0, None), param_facts=param_facts).key() == \
            VMAP_KEY + (("param_facts", param_facts),) + JIT_KEY


def test_the_example_primal_is_keyed_without_the_error_model():
    opts = GenerateOptions(**JIT, in_axes=(0,), param_facts=None).for_example()
    assert opts.key() == JIT_KEY[:5]


def test_each_backend_has_its_stages():
    assert STAGES == {"python": PYTHON_STAGES, "numba": NUMBA_STAGES}
    python = [s.name for s in PYTHON_STAGES]
    numba = [s.name for s in NUMBA_STAGES]
    assert python[:3] == numba[:3] == ["parse", "normalize", "view guards"]
    assert python[-3:] == numba[-3:] == ["write", "load", "store"]
    assert "fuse" in numba and "fuse" not in python and "restore regions" not in numba
