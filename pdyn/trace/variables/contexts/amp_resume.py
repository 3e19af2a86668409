"""An autocast or inference_mode block with a graph break inside it.

The graph before the break leaves the block at its end (an inference_mode guard object lives only
as long as the graph's frame, so the mode cannot be left on across the break). The frame code then
enters a `ResumedMode` with the block's arguments: the step function runs under it, and its bound
`__exit__` is the one the resume function finds on its stack. When the resume function is traced,
that exit is a graph node (`exit_resumed`) that leaves the innermost resumed mode where the block
ends; run as Python (a fallback, an exception's path), `__exit__` leaves it itself.
"""

from __future__ import annotations

import threading
import types
from typing import TYPE_CHECKING, Any

import torch

from pdyn.base.errors import Unsupported
from pdyn.guards.guards import EqualsGuard, TypeGuard
from pdyn.sources import AttrSource, Source
from pdyn.trace.variables.torch.amp_state import AMP_DEVICES, autocast_state, enter_mode, trace_time_autocast
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import ResumeCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

_local = threading.local()


def _open() -> list[ResumedMode]:
    if not hasattr(_local, "modes"):
        _local.modes = []
    return _local.modes


def resumed_exit(codegen: ResumeCodegen, node: Any, kind: str, args: tuple[Any, ...], leave: Any) -> str:
    """The `__exit__` the frame code hands the resume function of a break inside the block entered
    at `node`: the graph leaves the block at its end (`leave`), the frame code enters it again (the
    step runs in it) as a `ResumedMode`."""
    graph = node.graph
    graph.call_function(leave, (node,)).meta["loc"] = node.meta.get("loc")
    return f"{codegen.constant(ResumedMode, 'ResumedMode')}({kind!r}, {codegen.constant(args, 'args')}).__exit__"


class ResumedMode:
    """A block's mode entered again by a break's frame code (kind "autocast" with autocast's four
    arguments, or "inference_mode" with its one); `prior` is the state it was entered from."""

    def __init__(self, kind: str, args: tuple[Any, ...]):
        self.kind = kind
        self.args = args
        self.prior = (torch.is_grad_enabled(), *autocast_state())
        if kind == "autocast":
            self.mode: Any = torch.amp._enter_autocast(*args)
        else:
            self.mode = torch.autograd.grad_mode._enter_inference_mode(*args)
        _open().append(self)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: Any) -> bool:
        self.close()
        return False

    def close(self) -> None:
        if self.mode is None:
            return
        modes = _open()
        if self in modes:
            modes.remove(self)
        mode, self.mode = self.mode, None
        if self.kind == "autocast":
            torch.amp._exit_autocast(mode)
        else:
            torch.autograd.grad_mode._exit_inference_mode(mode)


def exit_resumed() -> None:
    """The resume graph's exit of its block: the innermost mode the frame code entered."""
    _open()[-1].close()


def is_resumed_exit(value: Any) -> bool:
    return getattr(value, "__func__", None) is ResumedMode.__exit__ and isinstance(value.__self__, ResumedMode)


class ResumedExitVariable(VariableTracker):
    """`resumed.__exit__` read from a resume function's arguments (its kind, arguments and prior
    state are guarded): calling it records `exit_resumed` and, at trace time, puts the prior state
    back for the ops that follow (undone when the trace ends, as the trace's own modes are)."""

    def __init__(self, value: Any, source: Source):
        self.resumed: ResumedMode = value.__self__
        self.source = source

    @classmethod
    def wrap(cls, tx: Tracer, value: Any, source: Source) -> ResumedExitVariable:
        owner = AttrSource(source, "__self__")
        tx.ctx.add_guard(TypeGuard(owner, ResumedMode, loc=tx.loc()))
        for name in ("kind", "args", "prior"):
            tx.ctx.add_guard(EqualsGuard(AttrSource(owner, name), getattr(value.__self__, name), loc=tx.loc()))
        return cls(value, source)

    def python_type(self) -> type:
        return types.MethodType

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if kwargs or not all(a.is_python_constant() and a.as_python_constant() is None for a in args):
            raise Unsupported("context_manager", "pdyn leaves a resumed autocast or inference_mode block in the "
                              "graph only when no exception is passing", loc=tx.loc())
        tx.output.annotate(tx.output.graph.call_function(exit_resumed, ()), tx.loc())
        grad, *amp = self.resumed.prior
        if self.resumed.kind == "autocast":
            device = self.resumed.args[0]
            # autocast_state(): (enabled, dtype) per device (exit_at_break resumes these devices only), then
            # the cache flag and inference mode
            enabled, dtype = amp[AMP_DEVICES.index(device)]
            enter_mode(trace_time_autocast(device, dtype, enabled, amp[-2]))
        else:
            enter_mode(torch._C._InferenceMode(amp[-1]))
        torch._C._set_grad_enabled(grad)  # as the guard object's exit restores it
        return ConstantVariable(False)

    def __repr__(self) -> str:
        return f"ResumedExitVariable({self.resumed.kind}{self.resumed.args})"
