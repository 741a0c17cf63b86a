"""The `s2s` command line.

    s2s show path/to/file.py:func [--transform grad|vjp|value_and_grad|jvp|vmap|jit|pmap] [--argnums 0,1] [--has-aux]
                                  [--in-axes 0,None] [--out-axes 0] [--of grad] [--arg-types 'f8[:],f8']
    s2s compile path/to/file.py:func --arg-types 'f8[:],f8[:,:]' [--of grad|value_and_grad] [--argnums 0]
    s2s --version

`show` imports the file as a module (with the file's directory first on
sys.path, so sibling imports work), looks up `func`, and prints a header
naming the source function and its file:line followed by the generated
module (the text of `s2s.show`).  `compile` fills the disk caches with the
machine code of `jit(func)` (or of jit of its grad / value_and_grad) for
those argument types, without running it: a container build or a cluster
job's first step, so that the run starts warm.

Exit codes: 0 success; 1 the transform refused the function (an
`s2s.S2SError`, printed with the user's file:line, source line and hint);
2 usage errors (missing file or function, a target that is not a function,
bad transform or argnums, an option the chosen transform does not take,
--arg-types that do not match the function's parameters, a file that fails
to import).  Neither error case prints a Python traceback.
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import sys
import traceback
from typing import Callable, Sequence

TRANSFORMS = ("grad", "value_and_grad", "vjp", "jvp", "vmap", "jit", "pmap")


class UsageError(Exception):
    """A problem with the command line or the target; exit code 2."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (exit 2)."""

    def error(self, message: str):  # noqa: D401 (argparse API)
        raise UsageError(f"{self.prog}: error: {message}")


def _parse_argnums(text: str) -> int | tuple[int, ...]:
    """'1' -> 1; '0,1' -> (0, 1); '0,' -> (0,)."""
    s = text.strip()
    if s.startswith("(") and s.endswith(")"):
        s = s[1:-1]
    parts = [p.strip() for p in s.split(",")]
    is_tuple = len(parts) > 1
    if is_tuple and parts[-1] == "":
        parts = parts[:-1]            # a trailing comma: a one-element tuple
    try:
        nums = tuple(int(p) for p in parts)
    except ValueError:
        nums = ()
    if not nums:
        raise argparse.ArgumentTypeError(
            f"invalid argnums {text!r}: give an int (1) or a comma-separated list of ints (0,1)")
    return nums if is_tuple else nums[0]


def _build_parser() -> _Parser:
    from . import __version__
    parser = _Parser(prog="s2s",
                     description="s2s: source-to-source automatic differentiation for NumPy code.")
    parser.add_argument("--version", action="version", version=f"s2s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    show = sub.add_parser(
        "show", help="print the source s2s generates for a function",
        description="Print the Python module s2s generates for a transform of FILE.py:FUNC.")
    show.add_argument("target", metavar="FILE.py:FUNC",
                      help="a Python file and a function defined in it")
    show.add_argument("--transform", "-t", default="grad", choices=TRANSFORMS,
                      help="which transform to show (default: grad)")
    show.add_argument("--argnums", "-a", default=None, type=_parse_argnums,
                      help="grad, value_and_grad (and jit --of): positional argument(s) to differentiate: "
                           "1, or 0,1 for a tuple (default: 0; vjp and jvp take every argument)")
    show.add_argument("--has-aux", action="store_true",
                      help="the function returns (value, aux)")
    show.add_argument("--of", choices=("grad", "value_and_grad"), default=None,
                      help="with --transform jit: show the compiled source of this transform of FUNC")
    show.add_argument("--arg-types", default=None, type=_parse_arg_types,
                      help="with --transform jit: show the code specialized on these argument types, "
                           "e.g. 'f8[:],f8' (f8/f4/i8/i4/b1 or float/int/bool, [:] per dimension)")
    show.add_argument("--in-axes", default=None, type=_parse_axes,
                      help="vmap: batch axis of each argument, e.g. 0,None (default: 0 for all)")
    show.add_argument("--out-axes", default=None, type=_parse_axes,
                      help="vmap: batch axis of the result (default: 0)")
    comp = sub.add_parser(
        "compile", help="compile jit's machine code for a function ahead of a run (fills the disk caches)",
        description="Compile jit(FUNC), or jit of its grad / value_and_grad, for the given argument types, "
                    "into s2s's and Numba's disk caches, without running it.")
    comp.add_argument("target", metavar="FILE.py:FUNC", help="a Python file and a function defined in it")
    comp.add_argument("--arg-types", required=True, type=_parse_arg_types,
                      help="the argument types to compile for, e.g. 'f8[:],f8[:,:],f8' (f8/f4/i8/i4/b1 or "
                           "float/int/bool, [:] per dimension)")
    comp.add_argument("--of", choices=("grad", "value_and_grad"), default=None,
                      help="compile jit of this transform of FUNC (default: jit(FUNC))")
    comp.add_argument("--argnums", "-a", default=None, type=_parse_argnums,
                      help="with --of: positional argument(s) to differentiate (default: 0)")
    comp.add_argument("--target", dest="device", default="cpu", choices=("cpu", "parallel"),
                      help="jit's target (default: cpu)")
    return parser


_DTYPE_CODES = {"f8": "float64", "float": "float64", "f4": "float32", "i8": "int64", "int": "int64",
                "i4": "int32", "b1": "bool", "bool": "bool"}


def _parse_arg_types(text: str) -> list:
    """'f8[:,:],f8' -> example arguments of those types (a 1x1 float64 array, a float)."""
    import re

    import numpy as np
    out = []
    for item in re.findall(r"[a-z0-9]+(?:\[[:,\s]*\])?", text.replace(" ", "")):
        m = re.fullmatch(r"([a-z0-9]+)(?:\[([:,]*)\])?", item)
        code, dims = m.group(1), m.group(2)
        if code not in _DTYPE_CODES:
            raise argparse.ArgumentTypeError(f"unknown type {code!r} in {text!r}; use f8, f4, i8, i4, b1, "
                                             f"float, int or bool, with [:] or [:,:] for arrays")
        dtype = np.dtype(_DTYPE_CODES[code])
        if dims is None:
            out.append(dtype.type(0).item() if code in ("float", "int", "bool") else dtype.type(0))
        else:
            out.append(np.zeros((1,) * dims.count(":"), dtype=dtype))
    if not out:
        raise argparse.ArgumentTypeError(f"no argument types in {text!r}")
    return out


def _split_target(target: str) -> tuple[str, str]:
    path, sep, func = target.rpartition(":")
    if not sep or not path or not func:
        raise UsageError(f"s2s show: error: expected FILE.py:FUNC, got {target!r}")
    if not func.isidentifier():
        raise UsageError(f"s2s show: error: {func!r} is not a function name "
                         f"(dotted names are not supported)")
    return path, func


def _display_path(path: str) -> str:
    """The path relative to the working directory when it lies below it."""
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute)
    except ValueError:  # another drive (Windows)
        return absolute
    return absolute if rel.startswith(os.pardir) else rel


def load_function(path: str, func: str) -> Callable:
    """Import `path` as a module and return its attribute `func`.

    Raises:
        UsageError: the file does not exist or cannot be imported, or has no
            callable named `func`.
    """
    if not os.path.isfile(path):
        raise UsageError(f"s2s show: error: no such file: {path}")
    absolute = os.path.abspath(path)
    directory = os.path.dirname(absolute)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    stem = os.path.splitext(os.path.basename(absolute))[0]
    modname = stem
    if not stem.isidentifier() or stem in sys.modules:   # never shadow an imported module
        modname = f"_s2s_cli_{abs(hash(absolute))}"
    spec = importlib.util.spec_from_file_location(modname, absolute)
    if spec is None or spec.loader is None:
        raise UsageError(f"s2s show: error: cannot import {path} (is it a Python file?)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[modname]
        where = f"{_display_path(exc.filename or path)}:{exc.lineno}"
        raise UsageError(f"s2s show: error: cannot import {path}: "
                         f"syntax error at {where}: {exc.msg}") from None
    except (Exception, SystemExit) as exc:  # user code may raise anything, even SystemExit
        del sys.modules[modname]
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if os.path.abspath(f.filename) == absolute]
        where = f" (line {frames[-1].lineno})" if frames else ""
        raise UsageError(f"s2s show: error: importing {path} raised "
                         f"{type(exc).__name__}: {exc}{where}") from None
    if not hasattr(module, func):
        raise UsageError(f"s2s show: error: {path} has no function {func!r}")
    fn = getattr(module, func)
    if not callable(fn):
        raise UsageError(f"s2s show: error: {path}:{func} is not a function "
                         f"(it is {type(fn).__name__!r})")
    if isinstance(fn, type):
        raise UsageError(f"s2s show: error: {path}:{func} is a class, not a function "
                         f"(name a function defined in the file)")
    if not _transformable(fn):
        raise UsageError(f"s2s show: error: {path}:{func} is not a function (it is a callable "
                         f"{type(fn).__name__!r} object); name a function defined in the file, "
                         f"e.g. one that calls it: def g(x): return {func}(x)")
    return fn


def _transformable(fn) -> bool:
    """A Python function or method, a transformation s2s made, or an op with an s2s rule."""
    from .rules.table import lookup
    if inspect.isfunction(inspect.unwrap(fn)) or inspect.ismethod(fn) or getattr(fn, "wrapper_kind", None):
        return True
    try:
        return lookup(fn) is not None
    except TypeError:                     # (an unhashable object)
        return False


def _arity(fn: Callable) -> tuple[int, int | None] | None:
    """(required, most) positional arguments of the function s2s reads for `fn` (most None: *args)."""
    from .errors import S2SError
    from .transformations.sources import source_function
    try:
        params = list(inspect.signature(source_function(fn)).parameters.values())
    except (S2SError, TypeError, ValueError):
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(1 for p in positional if p.default is p.empty)
    most = None if any(p.kind is p.VAR_POSITIONAL for p in params) else len(positional)
    return required, most


def _check_options(args: argparse.Namespace, fn: Callable, func: str) -> None:
    """Refuse options the chosen transform would silently ignore, and argument types that do not
    match the function (UsageError)."""
    t = args.transform
    if args.of is not None and t != "jit":
        raise UsageError(f"s2s show: error: --of works with --transform jit only (got --transform {t})")
    if args.arg_types is not None and t != "jit":
        raise UsageError(f"s2s show: error: --arg-types works with --transform jit only (got --transform {t})")
    for option, value in (("--in-axes", args.in_axes), ("--out-axes", args.out_axes)):
        if value is not None and t != "vmap":
            raise UsageError(f"s2s show: error: {option} works with --transform vmap only (got --transform {t})")
    takes_argnums = t in ("grad", "value_and_grad") or (t == "jit" and args.of is not None)
    if args.argnums is not None and not takes_argnums:
        every = " (it takes every argument)" if t in ("vjp", "jvp") else ""
        raise UsageError(f"s2s show: error: --argnums works with --transform grad, value_and_grad and "
                         f"jit --of ..., not with --transform {t}{every}")
    if args.has_aux and t not in ("grad", "value_and_grad", "vjp", "jvp", "jit"):
        raise UsageError(f"s2s show: error: --has-aux works with grad, value_and_grad, vjp, jvp and "
                         f"jit --of ..., not with --transform {t}")
    if args.has_aux and t == "jit" and args.of is None:
        raise UsageError("s2s show: error: --has-aux with --transform jit needs --of grad or --of value_and_grad")
    arity = _arity(fn) if args.arg_types is not None else None
    if arity is not None:
        required, most = arity
        given = len(args.arg_types)
        if given < required or (most is not None and given > most):
            takes = f"{required}" if most == required else (f"at least {required}" if most is None
                                                             else f"{required} to {most}")
            noun = "argument" if (most if most is not None else required) == 1 else "arguments"
            raise UsageError(f"s2s show: error: {func} takes {takes} {noun} and {given} "
                             f"{'type was' if given == 1 else 'types were'} given in --arg-types")


def _origin(fn: Callable, path: str) -> str:
    target = inspect.unwrap(fn)
    code = target.__code__ if inspect.isfunction(target) else None
    if code is None:
        return _display_path(path)
    return f"{_display_path(code.co_filename)}:{code.co_firstlineno}"


def _parse_axes(text: str):
    parts = [p.strip() for p in text.split(",")]
    try:
        axes = tuple(None if p == "None" else int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid axes {text!r}: give ints or None, comma-separated (0,None)")
    return axes if len(axes) > 1 or text.endswith(",") else axes[0]


def _header(transform: str, func: str, fn: Callable, path: str, argnums, has_aux: bool,
            in_axes=0, out_axes=0) -> str:
    options = []
    if transform == "vmap":
        options.append(f"in_axes={in_axes!r}, out_axes={out_axes!r}")
    elif transform not in ("vjp", "jvp") and argnums != 0:
        options.append(f"argnums={argnums!r}")
    if has_aux:
        options.append("has_aux=True")
    extra = f", {', '.join(options)}" if options else ""
    return f"# s2s show: {transform} of {func} ({_origin(fn, path)}){extra}"


def show(args: argparse.Namespace) -> int:
    import s2s
    from .errors import ArgumentError, S2SError

    path, func = _split_target(args.target)
    fn = load_function(path, func)
    _check_options(args, fn, func)
    args.argnums = 0 if args.argnums is None else args.argnums
    args.in_axes = 0 if args.in_axes is None else args.in_axes
    args.out_axes = 0 if args.out_axes is None else args.out_axes
    try:
        if args.transform == "jit" and args.of:
            inner = {"grad": s2s.grad, "value_and_grad": s2s.value_and_grad}[args.of](
                fn, argnums=args.argnums, has_aux=args.has_aux)
            text = s2s.show(inner, transform="jit", example_args=args.arg_types)
        elif args.transform == "jit":
            text = s2s.show(fn, transform="jit", example_args=args.arg_types)
        else:
            text = s2s.show(fn, transform=args.transform, argnums=args.argnums, has_aux=args.has_aux,
                            in_axes=args.in_axes, out_axes=args.out_axes)
    except ArgumentError as exc:          # argnums out of range and the like: a usage error
        raise UsageError(f"s2s show: error: {exc}") from None
    except S2SError as exc:
        print(f"s2s: cannot generate {args.transform} of {func} ({type(exc).__name__}):",
              file=sys.stderr)
        print(str(exc), file=sys.stderr)
        return 1
    print(_header(args.transform, func, fn, path, args.argnums, args.has_aux, args.in_axes, args.out_axes))
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def compile_command(args: argparse.Namespace) -> int:
    import time

    import s2s
    from .errors import ArgumentError, S2SError

    path, func = _split_target(args.target)
    fn = load_function(path, func)
    if args.argnums is not None and args.of is None:
        raise UsageError("s2s compile: error: --argnums works with --of grad or --of value_and_grad only")
    arity = _arity(fn)
    if arity is not None and not arity[0] <= len(args.arg_types) <= (arity[1] if arity[1] is not None else 1 << 30):
        takes = arity[0] if arity[1] == arity[0] else (
            f"{arity[0]} or more" if arity[1] is None else f"{arity[0]} to {arity[1]}")
        raise UsageError(f"s2s compile: error: {func} takes {takes} arguments; {len(args.arg_types)} "
                         f"{'type was' if len(args.arg_types) == 1 else 'types were'} given in --arg-types")
    what = fn if args.of is None else {"grad": s2s.grad, "value_and_grad": s2s.value_and_grad}[args.of](
        fn, argnums=0 if args.argnums is None else args.argnums)
    label = func if args.of is None else f"{args.of}({func})"
    start = time.perf_counter()
    try:
        jitted = s2s.jit(what, target=args.device, wait=True).compile(*args.arg_types)
    except ArgumentError as exc:
        raise UsageError(f"s2s compile: error: {exc}") from None
    except S2SError as exc:
        print(f"s2s: cannot compile jit({label}) ({type(exc).__name__}):", file=sys.stderr)
        print(str(exc), file=sys.stderr)
        return 1
    gen = jitted.generated_for_args(*args.arg_types)
    from .backends.numba_cpu import describe_types
    print(f"s2s compile: jit({label}) ({_origin(fn, path)}) for {describe_types(args.arg_types)}: "
          f"ready in {time.perf_counter() - start:.1f} s; generated file {gen.path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (also used as the console script)."""
    parser = _build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        if args.command == "show":
            return show(args)
        if args.command == "compile":
            return compile_command(args)
        raise UsageError(f"s2s: error: unknown command {args.command!r}")  # pragma: no cover
    except UsageError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except SystemExit as exc:             # --help / --version
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
