"""Forward hooks and forward pre-hooks registered inside the trace (`h = m.register_forward_hook(f)`,
`m(x)`, `h.remove()`, as feature-extraction code does): the registration is not inlined (its handle
holds the hook tables through weak references, and its id is a class counter that changes on every
call). The trace keeps the hooks registered on each module object beside the real tables; calling
the module runs them inline, in the order nn.Module runs them; `remove()` takes one out.

After the graph each registration is replayed, once, where the frame code first needs its handle (a
handle returned, stored or live at a graph break is that object): a hook still registered at the
end of the trace is registered for real (with its options, so the tables hold what eager's hold);
one removed in the trace leaves only what eager leaves, the handle counter moved on by one (a
removed `RemovableHandle`).
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
    from pdyn.trace.frame_codegen import FrameCodegen, ResumeCodegen
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


def _dead_handle() -> RemovableHandle:
    """A handle removed in the call, as eager leaves it: the handle counter moved on, its hook in no
    table (the dict it refers to is its own, weakly referenced as the hook tables are)."""
    return RemovableHandle(collections.OrderedDict())


def _registered(handle: RemovableHandle) -> None:
    """The replay's statement, in program order: the handle (and the registration) is made by the
    frame code's lines before it (`HookHandleVariable.reconstruct`)."""


class HookReplay(VariableTracker):
    """The replay of one registration after the graph (side_effects.call of `_registered(handle)`)."""

    def reconstruct(self, codegen: FrameCodegen) -> str:
        return codegen.constant(_registered, "hook_registered")


class HookHandleVariable(VariableTracker):
    """The RemovableHandle of a hook registered in the trace: `remove()` (also as a context
    manager's exit) is traced, its id is not known to the trace. Made once by the frame code (after
    the trace, so a later `remove()` counts): registered for real, or a removed handle."""

    def __init__(self, made: MadeHook, module: VariableTracker, register: Any):
        self.made = made
        self.module = module
        self.register = register

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

    def reconstruct_resumed(self, codegen: ResumeCodegen) -> str:
        # NOTE: live at a graph break, the resume function would get a real handle whose id (and
        # the hook table's keys) change on every call: it would compile per call; the frame runs
        # eagerly instead
        raise Unsupported("hook_handle", "pdyn cannot carry a hook handle made in the trace across a graph break")

    def reconstruct(self, codegen: FrameCodegen) -> str:
        if self.made.removed:
            return codegen.once(self, f"{codegen.constant(_dead_handle, 'dead_handle')}()")
        register = codegen.constant(functools.partial(self.register, **self.made.options), "register_hook")
        return codegen.once(self, f"{register}({codegen.reconstruct(self.module)}, "
                                  f"{codegen.reconstruct(self.made.hook)})")


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
    handle = HookHandleVariable(made, module, fn)
    tx.ctx.side_effects.call(HookReplay(), [handle], {})
    return handle
