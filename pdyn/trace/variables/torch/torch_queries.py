"""torch functions that are not ops: read-only queries of torch's global state, answered at trace
time as constants and guarded by calling them again (CallResultGuard), and the checks
`torch._assert`/`torch._check`, decided at trace time (a symbolic condition is guarded) whose
message is built only if the check fails, and `has_torch_function*`, answered from the arguments'
types (never their sizes) and the guarded torch function mode.
"""

from __future__ import annotations

import functools
import re
import types
from typing import TYPE_CHECKING, Any, Callable

import torch
import torch.fx

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.guards import CallResultGuard
from pdyn.trace.variables.restart import compiling_answer
from pdyn.trace.variables.torch.amp_state import AUTOCAST_QUERIES, autocast_query
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.registry import GivenRule, rule_given
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import ListVariable, TupleVariable, is_known, python_value
from pdyn.trace.variables.torch.tensor import TensorVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


def _present(*paths: str) -> list[Callable[..., Any]]:
    """The functions at these dotted paths under torch that this torch build has."""
    found = []
    for path in paths:
        obj: Any = torch
        for name in path.split("."):
            obj = getattr(obj, name, None)
        if callable(obj):
            found.append(obj)
    return found


# Queries that read global state and change nothing. Each answer is a guarded constant.
READ_ONLY_QUERIES = frozenset(_present(
    "backends.mha.get_fastpath_enabled", "compiler.is_exporting", "compiler.is_compiling",
    "compiler.is_dynamo_compiling", "jit.is_tracing", "jit.is_scripting", "_C._get_tracing_state",
    "fx._symbolic_trace.is_fx_tracing", "distributed.is_available", "distributed.is_initialized",
    "is_grad_enabled", "is_inference_mode_enabled", "is_autocast_enabled", "is_autocast_cpu_enabled",
    "get_autocast_dtype", "get_autocast_gpu_dtype", "is_autocast_cache_enabled", "get_autocast_cpu_dtype", "get_default_dtype",
    "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
    "cuda.is_available", "cuda.device_count", "cuda.is_initialized", "backends.cudnn.is_available",
    "backends.mps.is_available", "is_anomaly_enabled", "get_num_threads",
    "utils._python_dispatch._get_current_dispatch_mode_stack", "_C._get_cudnn_enabled",
))
# Queries of the devices present (read-only too), which raise on a machine without the device
# (`get_device_capability()` without CUDA): the raise is an answer, guarded like a value.
DEVICE_QUERIES = frozenset(_present(
    "cuda.get_device_capability", "cuda.get_device_name", "cuda.get_arch_list", "cuda.is_bf16_supported",
    "cuda.current_device", "cuda.is_tf32_supported", "backends.cuda.is_built", "backends.mps.is_built",
    "xpu.is_available", "backends.cudnn.version",
))
# answered without a guard of their own: a guard every trace has already pins them
PINNED_ELSEWHERE = frozenset({torch.is_grad_enabled})  # GradModeGuard
# True inside compiled code, as under torch.compile: libraries ask it to choose the path a compiler
# can capture (transformers skips its data-dependent mask checks), so pdyn answers as a compiler,
# except at call sites where eager's False captured more (restart.py).
COMPILING = frozenset(_present("compiler.is_compiling", "compiler.is_dynamo_compiling"))


# torch._C builtins named as a getter or a setter of global state (`_get_cudnn_deterministic`,
# `_get_warnAlways`, `_set_warnAlways`), as reached from Python wrappers such as
# `torch.get_float32_matmul_precision()`: a getter's answer is guarded; a setter's effect would be
# lost on a cache hit (its call records no node), so it runs eagerly.
_GETTER = re.compile(r"_?(get|is|are)_?[A-Za-z]")
_SETTER = re.compile(r"_?(set|enable|disable)_?[A-Za-z]")


def _c_builtin(fn: Any) -> bool:
    return isinstance(fn, types.BuiltinFunctionType) and (getattr(fn, "__module__", "") or "").startswith("torch._C")


def state_rule(tx: Tracer, fn: Any, args: list[VariableTracker],
               kwargs: dict[str, VariableTracker]) -> GivenRule | None:
    """The rule for a torch._C getter or setter of global state called on constants, or None."""
    if not _c_builtin(fn) or kwargs or not all(a.is_python_constant() for a in args):
        return None
    if _GETTER.match(fn.__name__):
        return query
    if _SETTER.match(fn.__name__):
        raise Unsupported("torch_setter", f"pdyn runs torch._C.{fn.__name__}() eagerly: it sets global state",
                          loc=tx.loc())
    return None


def device_answer(fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    """A device query's answer as a value: ("value", result) or ("raises", its type and message)."""
    try:
        return "value", fn(*args)
    except Exception as e:
        return "raises", (type(e), str(e))


@rule_given(*DEVICE_QUERIES)
def device_query(tx: Tracer, fn: Callable[..., Any], args: list[VariableTracker],
                 kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`fn(*args, **kwargs)` of a device query on constants: its answer now, raised or returned,
    guarded to be the same at each call."""
    if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
        raise Unsupported("torch_query", f"pdyn answers {fn.__name__}() only on constant arguments", loc=tx.loc())
    call = functools.partial(fn, **{k: v.as_python_constant() for k, v in kwargs.items()}) if kwargs else fn
    values = tuple(a.as_python_constant() for a in args)
    kind, answer = device_answer(call, *values)
    tx.ctx.add_guard(CallResultGuard(None, fn=device_answer, args=(call, *values), expected=(kind, answer),
                                     loc=tx.loc()))
    if kind == "raises":
        raise UserException(answer[0](answer[1]), tx.loc(), catchable=True)   # the guard decides it
    return tx.wrap_constant(answer)


@rule_given(*READ_ONLY_QUERIES)
def query(tx: Tracer, fn: Callable[..., Any], args: list[VariableTracker],
          kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`fn(*args)` of a read-only query: its answer now, guarded to be the answer at each call."""
    if kwargs or not all(a.is_python_constant() for a in args):
        raise Unsupported("torch_query", f"pdyn answers {fn.__name__}() only on constant positional arguments",
                          loc=tx.loc())
    values = tuple(a.as_python_constant() for a in args)
    if fn in COMPILING:
        return tx.wrap_constant(compiling_answer(tx))
    if fn in AUTOCAST_QUERIES:  # the trace's own autocast blocks change the answer: one guard on the start
        return autocast_query(tx, fn, values)
    try:
        result = fn(*values)
    except Exception as e:
        raise UserException(e, tx.loc()) from None
    if fn not in PINNED_ELSEWHERE:
        tx.ctx.add_guard(CallResultGuard(None, fn=fn, args=values, expected=result, loc=tx.loc()))
    return tx.wrap_constant(result)


def _bind(args: list[VariableTracker], kwargs: dict[str, VariableTracker],
          names: tuple[str, ...]) -> list[VariableTracker | None]:
    bound: list[VariableTracker | None] = [*args, *[None] * (len(names) - len(args))]
    for i, name in enumerate(names):
        if name in kwargs:
            bound[i] = kwargs[name]
    return bound


@rule_given(torch._assert)
def _assert(tx: Tracer, fn: Callable[..., Any], args: list[VariableTracker],
            kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`torch._assert(cond, message)`: the message (perhaps an f-string of symbolic sizes) is read
    only when the condition, decided and guarded here, fails."""
    cond, message = _bind(args, kwargs, ("condition", "message"))
    if cond is None or message is None:
        raise UserException(TypeError("_assert() missing a required argument"), tx.loc())
    if cond.truth(tx):
        return ConstantVariable(None)
    raise UserException(AssertionError(python_value(message, "an assert message", tx.loc())), tx.loc())


CHECKS = frozenset(_present("_check", "_check_index", "_check_value", "_check_type", "_check_not_implemented"))


@rule_given(*CHECKS)
def _check(tx: Tracer, fn: Callable[..., Any], args: list[VariableTracker],
           kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`torch._check(cond, lambda: message)` and kin: the message function runs only on failure."""
    cond, message = _bind(args, kwargs, ("cond", "message"))
    if cond is None:
        raise UserException(TypeError(f"{fn.__name__}() missing argument 'cond'"), tx.loc())
    if cond.python_type() is not bool:  # torch raises on a non-bool condition: let eager say it
        raise Unsupported("torch_check", f"pdyn traces {fn.__name__}() on a bool condition only", loc=tx.loc())
    if cond.truth(tx):
        return ConstantVariable(None)
    text = None
    if message is not None and not message.is_python_constant():
        made = message.call(tx, [], {})
        if not is_known(made):
            raise Unsupported("torch_check", f"pdyn cannot build the message of a failing {fn.__name__}()",
                              loc=tx.loc())
        text = python_value(made, "a check message", tx.loc())
    try:  # torch itself raises its exception type with its wording
        fn(False, None if message is None else (lambda: text))
    except Exception as e:
        raise UserException(e, tx.loc()) from None
    raise Unsupported("torch_check", f"{fn.__name__}(False) did not raise", loc=tx.loc())


# a stand-in of each tensor type pdyn traces, whose override of torch functions is what it asks
_STAND_INS = {torch.Tensor: torch.empty(0), torch.nn.Parameter: torch.nn.Parameter(torch.empty(0))}
HAS_TORCH_FUNCTION = frozenset(_present("_C._has_torch_function", "_C._has_torch_function_unary",
                                        "_C._has_torch_function_variadic"))


def _stand_in(tx: Tracer, vt: VariableTracker) -> Any:
    """A value with `vt`'s type, all has_torch_function reads of it (tuples and lists are walked)."""
    if isinstance(vt, TensorVariable) and vt.python_type() in _STAND_INS:
        return _STAND_INS[vt.python_type()]
    if isinstance(vt, (TupleVariable, ListVariable)) and type(vt) in (TupleVariable, ListVariable):
        items = [_stand_in(tx, item) for item in vt.items]
        return tuple(items) if isinstance(vt, TupleVariable) else items
    if vt.is_python_constant():
        return vt.as_python_constant()
    raise Unsupported("torch_query", f"pdyn answers has_torch_function() on tensors and constants, not on {vt}",
                      loc=tx.loc())


@rule_given(*HAS_TORCH_FUNCTION)
def _has_torch_function(tx: Tracer, fn: Callable[..., Any], args: list[VariableTracker],
                        kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`has_torch_function(args)`: depends on the arguments' types, which their guards pin, and on
    whether a torch function mode is on, guarded here; never on sizes (a call recorded on fake
    tensors would pin them)."""
    if kwargs:
        raise Unsupported("torch_query", f"pdyn answers {fn.__name__}() on positional arguments only", loc=tx.loc())
    mode = torch._C._is_torch_function_mode_enabled
    tx.ctx.add_guard(CallResultGuard(None, fn=mode, args=(), expected=mode(), loc=tx.loc()))
    try:
        result = fn(*[_stand_in(tx, a) for a in args])
    except Exception as e:
        raise UserException(e, tx.loc()) from None
    return ConstantVariable(result)


# the torch functions these rules answer (is_torch_function: they are torch's, though not in its namespaces)
QUERIES = READ_ONLY_QUERIES | DEVICE_QUERIES | {torch._assert} | CHECKS | HAS_TORCH_FUNCTION
