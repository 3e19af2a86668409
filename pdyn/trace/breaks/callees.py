"""A graph break inside an inlined call: the frame code calls the callee optimized on its own (its
code around its own break is compiled), with the sizes its arguments carry mapped to this frame's.
A user function, a method, a callable object's `__call__` and an nn.Module's forward (through
nn.Module's hooks where it has any) can be; anything else is called as it is.
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any, Callable

import torch

from pdyn.bytecode.instructions import Instruction
from pdyn.bytecode.transform import NOT_FRAMES
from pdyn.sources import ItemSource, LocalSource, SizeSource, Source
from pdyn.trace.breaks.crossing import origins
from pdyn.trace.frame_codegen import ResumeCodegen
from pdyn.trace.translator import InstructionTranslator
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.containers.core import DictVariable, ListVariable, TupleVariable
from pdyn.trace.variables.objects.user_objects import mro_lookup


def call_arguments(inst: Instruction, rest: list[VariableTracker]) -> tuple[list[Any], dict[str, Any]] | None:
    """(positional, keyword) argument trackers of the call `inst` over the stack above the callee
    (a method's `self` first); None where they are not known one by one."""
    if inst.opname == "CALL":
        cut = len(rest) - len(inst.kw_names)
        return list(rest[:cut]), dict(zip(inst.kw_names, rest[cut:]))
    args, kwargs = rest[0], rest[1] if len(rest) > 1 else None
    if not isinstance(args, (TupleVariable, ListVariable)) or \
            not (kwargs is None or isinstance(kwargs, DictVariable) and all(type(k) is str for k in kwargs.items)):
        return None
    return list(args.items), dict(kwargs.items) if kwargs is not None else {}


def callee_sizes(tx: InstructionTranslator, fn: types.FunctionType, first: VariableTracker | None,
                  args: tuple[list[Any], dict[str, Any]] | None) -> dict[SizeSource, SizeSource]:
    """A callee's sizes (`L['h'].size(0)`, `L['args'][0].size(1)`) -> this frame's, by binding the
    call's argument trackers to its parameters as the call will."""
    if args is None:
        return {}
    positional, keywords = args
    signature = inspect.signature(fn, follow_wrapped=False)
    try:
        bound = signature.bind(*([first] if first is not None else []), *positional, **keywords)
    except TypeError:
        return {}
    received: list[tuple[Source, Any]] = []
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            received += [(ItemSource(LocalSource(name), i), v) for i, v in enumerate(value)]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            received += [(ItemSource(LocalSource(name), k), v) for k, v in value.items()]
        else:
            received.append((LocalSource(name), value))
    return origins(tx, received)


def optimized_callee(codegen: ResumeCodegen, vt: VariableTracker, optimize: Callable[..., Any]) -> str | None:
    """The callable a break inside an inlined call calls instead of the callee: the same call with
    the callee's own code optimized on its own (so its code around its break is compiled); None to
    call it as it is. The callee's tracker says which code that is (`callee_at_break`)."""
    expr = vt.callee_at_break(BreakCallee(codegen, optimize))
    if expr is None:
        return None
    name = f"v{len(codegen.lines)}"
    codegen.lines.append(f"{name} = {expr}")
    return name


class BreakCallee:
    """What a tracker's `callee_at_break` builds with: `optimize(fn, first=None, at_call=False)` wraps
    `fn` with pdyn's hook, with the sizes the call's arguments carry mapped to the caller's."""

    def __init__(self, codegen: ResumeCodegen, optimize: Callable[..., Any]):
        self.codegen = codegen
        self.optimize = optimize

    def function(self, fn: Any, method_of: VariableTracker | None, read: VariableTracker | None = None) -> str | None:
        """`fn` optimized, bound to `method_of` where it is a method; with `read` (its tracker, read
        from the frame), guarded by its code, not its identity: each call runs its own closure and
        defaults. None where pdyn's hook cannot wrap `fn`."""
        if not optimizable(fn):
            return None
        constant = self.codegen.constant
        if read is None:   # made in the trace, or pinned by identity
            expr = constant(self.optimize(fn, method_of), "callee")
        else:
            wrapper = constant(self.optimize(fn, method_of, at_call=True), "callee")
            expr = f"{constant(functools.partial, 'partial')}({wrapper}, {self.codegen.reconstruct(read)})"
        return self.bound(expr, method_of)

    def module(self, vt: VariableTracker, module: torch.nn.Module, method_of: VariableTracker | None,
               rebuilt: bool = False) -> str | None:
        """`module(...)` with the code its `__call__` runs optimized (`module_call`); a module read
        from the frame is read at run time, so one entry serves every module of this structure; a
        module the trace made is the trace's object, or `rebuilt` by the frame code from its state."""
        call = module_call(module, lambda fn: self.optimize(fn, vt))
        if call is None:
            return None
        constant = self.codegen.constant
        if vt.source is None and not rebuilt:
            expr = constant(call, "module_call")
        else:
            kind, fn = (ModuleCall, call.forward) if isinstance(call, ModuleCall) \
                else (_bound_call, call.__func__)  # type: ignore[attr-defined]
            expr = f"{constant(kind, 'module_call')}({self.codegen.reconstruct(vt)}, {constant(fn, 'callee')})"
        return self.bound(expr, method_of)

    def nn_module_call(self, vt: VariableTracker, module: torch.nn.Module) -> str | None:
        """nn.Module's own `__call__` of `module` (`super().__call__(...)` in an overriding
        `__call__`): hooks as `_call_impl` runs them, the class's forward optimized."""
        forward = mro_lookup(type(module), "forward")
        if not optimizable(forward) or "forward" in module.__dict__:
            return None
        constant = self.codegen.constant
        return f"{constant(ModuleCall, 'module_call')}({self.codegen.reconstruct(vt)}, " \
               f"{constant(self.optimize(forward, vt), 'callee')})"

    def bound(self, expr: str, method_of: VariableTracker | None) -> str:
        if method_of is None:
            return expr
        return f"{self.codegen.constant(types.MethodType, 'MethodType')}({expr}, {self.codegen.reconstruct(method_of)})"


def module_call(module: torch.nn.Module, optimize: Callable[[Any], Any]) -> Callable[..., Any] | None:
    """`module(...)` with the code its `__call__` runs optimized: a Python `__call__` of its class,
    else its class's `forward` where nn.Module's `__call__` would call only forward."""
    call = mro_lookup(type(module), "__call__")
    if call is not torch.nn.Module.__call__:
        return types.MethodType(optimize(call), module) if optimizable(call) else None
    forward = mro_lookup(type(module), "forward")
    if not optimizable(forward) or "forward" in module.__dict__:
        return None
    return ModuleCall(module, optimize(forward))


def optimizable(fn: Any) -> bool:
    """A plain function pdyn's hook can wrap: not a generator or coroutine, and parameters a
    signature can spell (a comprehension's `.0` is none)."""
    if not isinstance(fn, types.FunctionType) or fn.__code__.co_flags & NOT_FRAMES:
        return False
    code = fn.__code__
    count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) \
        + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return all(name.isidentifier() for name in code.co_varnames[:count])


def _bound_call(module: torch.nn.Module, call: Callable[..., Any]) -> Callable[..., Any]:
    """An optimized `__call__` of the module's class, bound to the module the frame code read."""
    return types.MethodType(call, module)


class ModuleCall:
    """Calls `module` as nn.Module's `__call__` does where it has no hooks (each call checks, as
    `_call_impl` does): straight to forward, here the optimized one; else `module(...)` itself."""

    def __init__(self, module: torch.nn.Module, forward: Callable[..., Any]):
        self.module = module
        self.forward = forward

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        m = self.module
        hooks = torch.nn.modules.module
        if m._compiled_call_impl is not None or torch._C._get_tracing_state() or "forward" in m.__dict__:
            return m(*args, **kwargs)
        if m._backward_hooks or m._backward_pre_hooks or m._forward_hooks or m._forward_pre_hooks \
                or hooks._global_backward_pre_hooks or hooks._global_backward_hooks \
                or hooks._global_forward_hooks or hooks._global_forward_pre_hooks:
            return call_with_hooks(m, types.MethodType(self.forward, m), args, kwargs)
        return self.forward(m, *args, **kwargs)


def call_with_hooks(module: torch.nn.Module, forward: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """`module(*args, **kwargs)` through nn.Module's own hook machinery (backward and global hooks
    run as eager runs them) with `forward` (the optimized one) as the forward it calls: set on the
    instance for the call only."""
    module.__dict__["forward"] = forward
    try:
        return module(*args, **kwargs)
    finally:
        if module.__dict__.get("forward") is forward:
            del module.__dict__["forward"]
