"""Numba's errors, translated: a TransformError at the user's line that says what failed.

Numba reports typing failures in the generated file (or in one of s2s's helpers it compiled for
it); codegen/user_lines.py maps those lines back to the user's code. A failure inside an s2s
helper says the user's code needs no change.
"""
from __future__ import annotations

import linecache
import os
import re

from ..codegen.emit import Generated
from ..codegen.user_lines import at_user_line, function_site, helper_modules, user_origin, user_site
from ..errors import TransformError
from ..frontend.namespace import HELPER_MODULES


def is_compile_error(exc) -> bool:
    try:
        import numba
        errors = numba.core.errors
        if isinstance(exc, errors.NumbaError) and not isinstance(exc, errors.NumbaRuntimeError):
            return True     # TypingError, LoweringError, UnsupportedError, InternalError, ...
    except ImportError:  # pragma: no cover
        pass
    return isinstance(exc, TransformError) or _raised_inside_numba(exc) or _unboxable_result(exc)


def _unboxable_result(exc) -> bool:
    """The compiled code ran but its result has no Python form (a dict literal mixing an array and a
    number is a heterogeneous Numba dict): as much a failure to compile the function as a typing
    error is; the generated Python gives the dict."""
    return isinstance(exc, TypeError) and "cannot convert native" in str(exc)


def _raised_inside_numba(exc) -> bool:
    """An exception raised by Numba's own Python code (its compiler: an internal error while
    typing generated code, not wrapped in a TypingError). Errors of the compiled code itself
    come from the dispatcher's C code, whose last Python frame is the caller's."""
    import numba
    tb = exc.__traceback__
    if tb is None:
        return False
    package = os.path.dirname(os.path.abspath(numba.__file__)) + os.sep
    passes = os.path.join(package, "core", "compiler_machinery.py")
    previous = None
    while tb.tb_next is not None:
        # raised while Numba's compiler ran (its passes: type inference calling s2s's overloads)
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == passes:
            return True
        previous, tb = tb, tb.tb_next
    if previous is not None and not os.path.abspath(previous.tb_frame.f_code.co_filename).startswith(package):
        # one Numba frame right below the caller's: a `raise` in compiled code (Numba gives it the
        # location of the raise in its sources: np.linalg's LinAlgError), not its compiler
        return False
    return os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(package)


def compile_error(jitted, exc, nargs, gen: Generated | None = None) -> Exception:
    """Numba's error as a TransformError at the user's line (through the generated files' comments).

    When the code that failed is one of s2s's own helpers (an adjoint such as `cumsum_vjp`, a
    runtime helper), the user's code is fine: the error says s2s has no compiled version of
    that helper for these argument types, and names the user's line it serves."""
    if isinstance(exc, TransformError):
        return at_user_line(exc, jitted)
    if gen is None:
        # the code that failed: the unfused version if one was tried (key: nargs, fused, facts)
        tried = [(key, g) for key, g in jitted._gens.items() if key[0] == nargs]
        unfused = [g for key, g in tried if key[1] is False]
        named = [g for _, g in tried if os.path.basename(g.path) in str(exc)]     # the one Numba names
        gen = ([g for g in named if g in unfused] or named or unfused or [g for _, g in tried] or [None])[-1]
    reason = _compile_reason(exc)
    if gen is None:
        filename, lineno = function_site(jitted.fun)
        return TransformError(f"Numba cannot compile the generated code for {jitted.fun!r} in nopython mode: {reason}",
                              filename=filename, lineno=lineno,
                              hint=_missing_package_hint(exc)
                              or "jit(f, fallback=True) runs the generated Python instead; or run it without jit")
    line, helper, numpy_call = _numba_failure(exc, gen)
    lines = gen.source.splitlines()
    gen_line = lines[line - 1].strip() if line is not None and 0 < line <= len(lines) else ""
    filename, lineno, origin = user_origin(gen)
    where, inlined = None, None
    if line is not None:
        filename, lineno, where, inlined = user_site(gen, line)
    helper = inlined or helper      # vmap inlines helpers: the one whose code failed
    if numpy_call is not None and (where is None or numpy_call in where):
        # the user's own NumPy call (compiled as it is, or batched by bmap): Numba has no version of it
        msg = f"Numba cannot compile the generated code for {origin} in nopython mode: {reason}"
        hint = "use operations Numba supports, or jit(f, fallback=True) to run the generated Python"
    elif helper is not None:
        at = f"`{where}` ({os.path.basename(filename)}, line {lineno})" if where else origin
        msg = (f"s2s has no compiled version of its helper `{helper}` for these argument types yet: Numba cannot "
               f"compile it in nopython mode ({reason}). s2s generated the call for {at}; "
               f"your code needs no change")
        hint = "run it with jit(f, fallback=True) (the generated Python) or without jit"
    else:
        # s2s's code for the line (a derivative, a batched form) that Numba cannot type
        msg = f"Numba cannot compile the generated code for {origin} in nopython mode: {reason}"
        hint = "jit(f, fallback=True) runs the generated Python instead; or run it without jit"
    if gen_line:
        msg += f" (generated line: `{gen_line}`)"
    missing = _missing_package_hint(exc)
    return TransformError(msg, filename=filename, lineno=lineno, source_line=where, hint=missing or hint)


def _missing_package_hint(exc) -> str | None:
    """What to install when Numba failed for want of a package (SciPy for `@` and np.linalg)."""
    try:
        from . import numba_cpu
    except ImportError:  # pragma: no cover
        return None
    finder = getattr(numba_cpu, "missing_package_hint", None)
    return finder(_strip_ansi(str(exc))) if finder is not None else None


def _compile_reason(exc) -> str:
    """What Numba says failed, for a message: its first line (with the signature it found no
    implementation for), without object addresses or generated files' paths."""
    text = _strip_ansi(str(exc))
    reason = numba_reason(exc)
    if reason.endswith("found for signature:"):
        rest = text.split("found for signature:", 1)[1]
        sig = next((ln.strip() for ln in rest.splitlines() if ln.strip()), "")
        if sig.startswith(">>>"):
            reason += " " + sig[3:].strip()
    reason = re.sub(r" at 0x[0-9a-fA-F]+>", ">", _unpath(reason))
    reason = re.sub(r", operation: call \$.*", "", reason)     # Numba's IR of the call: noise here
    return reason if len(reason) <= 400 else reason[:400] + "..."


# Where the code a Numba error names comes from. Generated files map to the user's lines
# through their comments: `# <user source line>` (or `# grad of: <line>`) above the statements
# made from that line, and `Generated.origin`, "file:line (qualname)" of the function they
# were generated from (a user file, or for vmap(grad(f)) and hessian(f) another generated file).
_BACKEND_HELPER_MODULES = ("s2s.backends.numba_lower.common", "s2s.backends.numba_lower.loops",
                           "s2s.backends.numba_lower.op_helpers", "s2s.ops.reductions.numba_kernels",
                           "s2s.runtime.core_numba",
                           "s2s.runtime.batching_numba", "s2s.runtime.fused_numba", "s2s.ops.elementwise.numba_vecmath")


def _is_s2s_helper(value) -> bool:
    fn = getattr(value, "py_func", value)     # a Numba dispatcher: its Python function
    return callable(fn) and not isinstance(fn, type) and (
        getattr(fn, "__module__", None) in (*HELPER_MODULES, *_BACKEND_HELPER_MODULES))


def _numba_failure(exc, gen: Generated) -> tuple[int | None, str | None, str | None]:
    """The line of `gen`'s file a Numba error points at, the name (in gen's namespace) of the
    s2s helper whose compilation failed if it was one, and the NumPy function Numba refused
    if that line calls it."""
    text = _strip_ansi(str(exc))
    base = os.path.basename(gen.path)
    line = None
    for pattern in (r'File "([^"]+)", line (\d+)', r"typing of call at (\S+) \((\d+)\)"):
        line = next((int(m.group(2)) for m in re.finditer(pattern, text)
                     if os.path.basename(m.group(1)) == base), None)
        if line is not None:
            break
    # an internal error of Numba's typing (not a TypingError): its traceback holds the type
    # inference of each function being compiled, outermost first, and the call being typed
    typed = []
    tb = exc.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        func_id = getattr(owner, "func_id", None)
        if func_id is not None and getattr(func_id, "func", None) is not None:
            if not typed or typed[-1] is not func_id.func:
                typed.append(func_id.func)
        loc = getattr(owner, "loc", None)
        if line is None and os.path.basename(str(getattr(loc, "filename", ""))) == base:
            line = getattr(loc, "line", None)
        tb = tb.tb_next
    namespace = _namespace_of(gen)
    helpers = {}
    for key, value in namespace.items():
        if _is_s2s_helper(value):
            helpers[id(value)] = key
            helpers[id(getattr(value, "py_func", value))] = key
    helper = None
    for fn in typed:          # the first helper the generated code called
        if id(fn) in helpers:
            helper = helpers[id(fn)]
            break
    if helper is None:        # Numba names the innermost failure first, the generated code's callee last
        for m in re.finditer(r"<function (\w+) at 0x([0-9a-fA-F]+)>", text):
            helper = helpers.get(int(m.group(2), 16), helper)
    if helper is None:        # a line of a helper's own source in the error
        for m in re.finditer(r'(?:File "([^"]+)", line (\d+)|Raised from (\S+) \((\d+)\)'
                              r'|typing of call at (\S+) \((\d+)\))', text):
            path = next(g for g in m.groups()[0::2] if g)
            number = int(next(g for g in m.groups()[1::2] if g))
            name = _helper_at(path, number)
            if name is not None and name in namespace and _is_s2s_helper(namespace[name]):
                helper = name
    lines = gen.source.splitlines()
    code = lines[line - 1] if line is not None and 0 < line <= len(lines) else ""
    if helper is None:        # the generated line calls a helper the error names
        for called in re.findall(r"(?<![\w.])(\w+)\(", code):     # (not methods: tape.pop())
            if called in namespace and _is_s2s_helper(namespace[called]) and re.search(rf"\b{called}\b", text):
                helper = called
                break
    # the user's function Numba refused (a NumPy function, or one of theirs), if the generated
    # line calls it (or batches it: bmap(np.f, ...))
    refused = set()
    for pattern in (r"NumPy function 'numpy\.([\w.]+)'", r"<function (\w+) at 0x", r"<built-in function (\w+)>",
                    r"Unknown attribute '(\w+)' of type Module", r"Untyped global name '(\w+)'"):
        refused |= {m.split(".")[-1] for m in re.findall(pattern, numba_reason(exc))}
    numpy_call = None
    for m in re.finditer(r"\b(np\.(?:\w+\.)*)?(\w+)\b", code):
        if m.group(2) in refused and (m.group(1) or not _is_s2s_helper(namespace.get(m.group(2)))):
            numpy_call = m.group(2)
            break
    return line, helper, numpy_call


def _helper_at(path: str, number: int) -> str | None:
    """The function of an s2s helper module (runtime, op helpers) whose source holds line `number` of `path`."""
    module = next((m for m in helper_modules() if os.path.abspath(m.__file__) == os.path.abspath(path)), None)
    if module is None:
        return None
    lines = linecache.getlines(module.__file__)
    for j in range(min(number, len(lines)) - 1, -1, -1):
        m = re.match(r"def (\w+)\(", lines[j])
        if m:
            return m.group(1)
    return None


def _namespace_of(gen: Generated) -> dict:
    fn = getattr(gen.fn, "py_func", gen.fn)
    return getattr(fn, "__globals__", {}) or {}


def _unpath(text: str) -> str:
    """A Numba message without the generated files' paths (`location: <file> (line)`)."""
    text = re.sub(r",?\s*location: \S+ \(\d+\)", "", text)
    # generated files are named <stem>_<16 hex digits>.py (emit.write_module)
    return re.sub(r"[^\s'\"(]*?\w+_[0-9a-f]{16}\.py(?: \(\d+\))?", "the generated code", text)


def numba_reason(exc) -> str:
    """The line of a Numba error that says what failed (not its 'Failed in ... pipeline' header)."""
    text = _strip_ansi(str(exc))
    first = next((ln for ln in text.splitlines() if ln.strip() and "Failed in" not in ln
                  and not ln.startswith("- Resolution failure")), text[:200])
    return first.strip() or type(exc).__name__


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)
