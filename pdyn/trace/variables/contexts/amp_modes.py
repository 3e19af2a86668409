"""torch.autocast and torch.inference_mode blocks, modelled like grad mode: entering one changes
torch's state for real at trace time (so fake tensors get eager's dtypes and inference flags, and
state queries answer as eager's would) and records the same change into the graph as
`torch.amp._enter_autocast` / `_exit_autocast` (or `_enter_inference_mode` / `_exit_inference_mode`)
nodes, so the compiled graph runs the ops inside under the state eager ran them in. The exit node
takes the enter node's result, which remembers the state to put back at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.torch.amp_state import AMP_DEVICES, OPEN, enter_mode, pin_entry_state, trace_time_autocast
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.contexts.amp_resume import resumed_exit
from pdyn.trace.variables.contexts.context_base import BUILDERS, ContextManagerVariable

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import ResumeCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

NONE = ConstantVariable(None)


def _exit(mode: Any) -> None:
    if OPEN and mode in OPEN[-1]:
        OPEN[-1].remove(mode)
    mode.__exit__(None, None, None)


class AutocastVariable(ContextManagerVariable):
    """`torch.autocast(device_type, dtype, enabled, cache_enabled)`: its arguments are resolved by
    autocast's own `__init__` at trace time (its errors and warnings are eager's)."""

    def __init__(self, cls: type, device: str, dtype: torch.dtype, enabled: bool, cache: bool):
        super().__init__(cls)
        self.args = (device, dtype, enabled, cache)
        self.entered: list[tuple[Any, Any]] = []  # (graph node, trace-time mode) per open entry

    @classmethod
    def of(cls, value: Any) -> AutocastVariable:
        return cls(type(value), value.device, value.fast_dtype, value._enabled, value._cache_enabled)

    def enter(self, tx: Tracer) -> VariableTracker:
        pin_entry_state(tx)
        node = tx.output.annotate(tx.output.graph.call_function(torch.amp._enter_autocast, self.args), tx.loc())
        mode = trace_time_autocast(*self.args)
        enter_mode(mode)
        self.entered.append((node, mode))
        return self

    def exit(self, tx: Tracer, exc: VariableTracker) -> VariableTracker:
        if not self.entered:
            raise Unsupported("context_manager", "pdyn cannot exit an autocast block it did not enter", loc=tx.loc())
        node, mode = self.entered.pop()
        tx.output.annotate(tx.output.graph.call_function(torch.amp._exit_autocast, (node,)), tx.loc())
        _exit(mode)
        return ConstantVariable(False)

    def exit_at_break(self, codegen: ResumeCodegen) -> str:
        if not self.entered:
            return super().exit_at_break(codegen)
        if self.args[0] not in AMP_DEVICES:
            raise Unsupported("resume", f"pdyn resumes autocast blocks of {', '.join(AMP_DEVICES)} only")
        return resumed_exit(codegen, self.entered[-1][0], "autocast", self.args, torch.amp._exit_autocast)

    def is_python_constant(self) -> bool:
        return True  # what a decorator's closure holds: its arguments are all it is

    def as_python_constant(self) -> Any:
        device, dtype, enabled, cache = self.args
        return self.cls(device_type=device, dtype=dtype, enabled=enabled, cache_enabled=cache)

    def __repr__(self) -> str:
        return f"AutocastVariable{self.args}"


class InferenceModeVariable(ContextManagerVariable):
    """`torch.inference_mode(mode)`: a block (or, through `clone`, a decorated function's call)."""

    def __init__(self, cls: type, mode: bool):
        super().__init__(cls)
        self.mode = mode
        self.entered: list[tuple[Any, Any]] = []

    def enter(self, tx: Tracer) -> VariableTracker:
        node = tx.output.annotate(tx.output.graph.call_function(
            torch.autograd.grad_mode._enter_inference_mode, (self.mode,)), tx.loc())
        context = torch._C._InferenceMode(self.mode)
        enter_mode(context)
        self.entered.append((node, context))
        return NONE

    def exit(self, tx: Tracer, exc: VariableTracker) -> VariableTracker:
        if not self.entered:
            raise Unsupported("context_manager", "pdyn cannot exit an inference_mode block it did not enter",
                              loc=tx.loc())
        node, context = self.entered.pop()
        tx.output.annotate(tx.output.graph.call_function(torch.autograd.grad_mode._exit_inference_mode, (node,)),
                           tx.loc())
        _exit(context)
        return NONE

    def clone(self, tx: Tracer) -> VariableTracker:
        return InferenceModeVariable(self.cls, self.mode)

    def exit_at_break(self, codegen: ResumeCodegen) -> str:
        if not self.entered:
            return super().exit_at_break(codegen)
        return resumed_exit(codegen, self.entered[-1][0], "inference_mode", (self.mode,),
                            torch.autograd.grad_mode._exit_inference_mode)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self) -> Any:
        return self.cls(self.mode)

    def __repr__(self) -> str:
        return f"InferenceModeVariable({self.mode})"


def _build_autocast(tx: Tracer, cls: type, args: list[VariableTracker],
                    kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    if not all(v.is_python_constant() for v in [*args, *kwargs.values()]):
        return None
    try:
        value = cls(*(a.as_python_constant() for a in args), **{k: v.as_python_constant() for k, v in kwargs.items()})
    except Exception as e:
        raise UserException(e, tx.loc()) from None
    return AutocastVariable.of(value)


def _build_inference_mode(tx: Tracer, cls: type, args: list[VariableTracker],
                          kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    mode = args[0] if args else kwargs.get("mode", ConstantVariable(True))
    if len(args) > 1 or kwargs.keys() - {"mode"} or not mode.is_python_constant() \
            or not isinstance(mode.as_python_constant(), bool):
        return None  # `torch.inference_mode(fn)`: the decorator form, through the class
    return InferenceModeVariable(cls, mode.as_python_constant())


# torch.cpu.amp.autocast and torch.cuda.amp.autocast: deprecated subclasses that fill in the device
AUTOCAST_TYPES = tuple(dict.fromkeys(getattr(m, "autocast") for m in (torch, torch.cpu.amp, torch.cuda.amp)
                                     if isinstance(getattr(m, "autocast", None), type)))
BUILDERS.update({kind: _build_autocast for kind in AUTOCAST_TYPES})
BUILDERS[torch.inference_mode] = _build_inference_mode


def is_amp_object(value: Any) -> bool:
    """An autocast or inference_mode object made before the trace (a decorator's), or its `clone`."""
    return type(getattr(value, "__self__", value)) in (*AUTOCAST_TYPES, torch.inference_mode)


def amp_object(value: Any) -> VariableTracker:
    if type(value) is torch.inference_mode:
        return InferenceModeVariable(torch.inference_mode, value.mode)
    return AutocastVariable.of(value)
