"""Forward hooks and forward pre-hooks registered inside the trace (`h = m.register_forward_hook(f)`,
`m(x)`, `h.remove()`, as feature-extraction code does): the registration is not inlined (its handle
holds the hook tables through weak references, and its id is a class counter that changes on every
call). The trace keeps the hooks registered on each module object beside the real tables; calling
the module runs them inline, in the order nn.Module runs them; `remove()` takes one out.

After the graph, in program order with the other side effects, each registration is replayed: a
hook still registered at the end of the trace is registered for real (with its options, so the
tables hold what eager's hold); one removed in the trace leaves only what eager leaves, the handle
counter moved on by one (a `RemovableHandle` made and dropped).
"""

from __future__ import annotations

import collections
import functools
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch.utils.hooks import RemovableHandle

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.objects.nn_module import NNModuleVariable
from pdyn.trace.variables.registry import rule_given

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

REGISTERS = {torch.nn.Module.register_forward_hook: "_forward_hooks",
             torch.nn.Module.register_forward_pre_hook: "_forward_pre_hooks"}


@dataclass
class MadeHook:
    """One hook registered in the trace on one module, and whether the trace removed it."""

    table: str                  # "_forward_hooks" or "_forward_pre_hooks"
    hook: VariableTracker
    options: dict[str, Any]     # prepend, with_kwargs, always_call as given
    removed: bool = False

    @property
    def with_kwargs(self) -> bool:
        return bool(self.options.get("with_kwargs", False))


def _replay(module: torch.nn.Module, hook: Any, removed: bool, *, register: Any, options: dict[str, Any]) -> None:
    """What a registration left after the eager call: the hook registered, or only the handle
    counter moved on (a handle made and dropped, as `register_*` and `remove()` leave it)."""
    if removed:
        RemovableHandle(collections.OrderedDict())   # a dict that can be weakly referenced
    else:
        register(module, hook, **options)


class HookReplay(VariableTracker):
    """The replay of one registration, made after the graph (side_effects.call); its arguments
    are read when the frame code is made, after the trace, so a later `remove()` counts."""

    def __init__(self, register: Any, made: MadeHook):
        self.register = register
        self.made = made

    def reconstruct(self, codegen: FrameCodegen) -> str:
        replay = functools.partial(_replay, register=self.register, options=dict(self.made.options))
        return codegen.constant(replay, "replay_hook_registration")


class _HookArgument(VariableTracker):
    """The hook the replay registers (None where the trace removed it), or whether it did."""

    def __init__(self, made: MadeHook, removed_flag: bool):
        self.made = made
        self.removed_flag = removed_flag

    def reconstruct(self, codegen: FrameCodegen) -> str:
        if self.removed_flag:
            return repr(self.made.removed)
        return "None" if self.made.removed else codegen.reconstruct(self.made.hook)


class HookHandleVariable(VariableTracker):
    """The RemovableHandle of a hook registered in the trace: `remove()` (also as a context
    manager's exit) is traced; its id and the handle itself stay inside the trace."""

    def __init__(self, made: MadeHook):
        self.made = made

    def python_type(self) -> type:
        return RemovableHandle

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name in ("remove", "__exit__", "__enter__"):
            return HandleMethodVariable(self, name)
        raise Unsupported("hook_handle", f"pdyn cannot read RemovableHandle.{name} of a hook registered in the "
                          "trace", loc=tx.loc())

    def call_method(self, tx: Tracer, name: str, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.getattr(tx, name).call(tx, args, kwargs)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        raise Unsupported("hook_handle", "pdyn cannot hand a hook handle made in the trace to Python")


class HandleMethodVariable(VariableTracker):
    def __init__(self, handle: HookHandleVariable, name: str):
        self.handle = handle
        self.name = name

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if self.name == "__enter__":
            return self.handle
        self.handle.made.removed = True   # `remove()` twice is a no-op, as eager's
        return ConstantVariable(None)


@rule_given(*REGISTERS)
def _register(tx: Tracer, fn: Any, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise UserException(e, tx.loc()) from None
    module = bound.arguments["self"]
    if not isinstance(module, NNModuleVariable) or module.source is None:
        raise Unsupported("module_hooks", "pdyn traces registering a hook only on a module of the inputs", loc=tx.loc())
    options = {k: v.as_python_constant() for k, v in bound.arguments.items() if k not in ("self", "hook")}
    if options.get("always_call"):
        raise Unsupported("module_hooks", "pdyn cannot trace registering an always_call hook", loc=tx.loc())
    made = MadeHook(REGISTERS[fn], bound.arguments["hook"], options)
    tx.ctx.module_hooks.setdefault(id(module.value), []).append(made)
    tx.ctx.side_effects.call(HookReplay(fn, made), [module, _HookArgument(made, False), _HookArgument(made, True)], {})
    return HookHandleVariable(made)
