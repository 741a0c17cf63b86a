"""The transformation objects: what `s2s.grad`, `jacfwd`, `vmap` and `jit` return.

One module per object (grad.py: grad, value_and_grad, vjp and jvp; jacobians.py: jacfwd, jacrev,
hessian; vmap.py; jit.py), each holding what it wraps and calling the pipeline driver
(s2s/pipeline.py) for generated code; sources.py says which Python function a transform reads,
calls.py how a call's arguments are checked and bound. s2s/api.py holds the public functions.
"""
