"""A graph break inside a `with` or `try` block: what the frame code hands the resume functions.

The step function runs the breaking instruction in the state the graph left (a grad mode the block
entered is still set: the graph sets it and nothing has left the block yet). The resume functions
continue inside the user's blocks (`pdyn.bytecode.transform`): for a `with` block, the `__exit__`
on the stack is one of theirs, so the frame code rebuilds it as a real callable. A manager pdyn
models (grad mode, nullcontext) becomes an object whose `__exit__` does what the tracker's exit
does; a user manager's bound `__exit__` is rebuilt as any value is. A `@contextmanager` generator
suspended inside the trace cannot be rebuilt: the trace restarts with a break before the with
statement (variables/restart.py), so the frame code enters that manager for real.
"""

from __future__ import annotations

import contextlib
import types
from typing import Any

import torch

from pdyn.base.errors import Unsupported
from pdyn.trace.frame_codegen import ResumeCodegen
from pdyn.trace.translator import InstructionTranslator
from pdyn.trace.variables.amp_modes import AutocastVariable, InferenceModeVariable
from pdyn.trace.variables.amp_resume import ResumedMode
from pdyn.trace.variables.amp_state import AMP_DEVICES
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.context_managers import (BoundHook, GeneratorContextVariable, GradModeVariable,
                                                   NullContextVariable)
from pdyn.trace.variables.restart import RestartTrace


class RestoreGradMode:
    """The `__exit__` of a grad-mode block entered in the graph: it puts back the mode seen before
    the block (exit never suppresses). A plain Python class, so a resume function traces it."""

    def __init__(self, prior: bool):
        self.prior = prior

    def __enter__(self) -> None:  # a with statement needs both; the resume function only exits
        return None

    def __exit__(self, *exc_info: Any) -> None:
        torch.set_grad_enabled(self.prior)


def exit_hook(codegen: ResumeCodegen, vt: VariableTracker) -> str | None:
    """The frame code's expression for a with block's `__exit__` on the stack at a break, or None
    where `vt` is no exit of a manager pdyn models (rebuilt as any other value)."""
    if not isinstance(vt, BoundHook) or vt.which != "exit":
        return None
    manager = vt.manager
    if isinstance(manager, GradModeVariable) and manager.prior is not None:
        return f"{codegen.constant(RestoreGradMode, 'RestoreGradMode')}({manager.prior!r}).__exit__"
    if isinstance(manager, NullContextVariable):
        return f"{codegen.constant(contextlib.nullcontext, 'nullcontext')}().__exit__"
    if isinstance(manager, (AutocastVariable, InferenceModeVariable)) and manager.entered:
        return _resumed_mode(codegen, manager)
    if isinstance(manager, GeneratorContextVariable):  # suspended at its yield in the trace: break before the with
        raise RestartTrace(manager.exit_site(), f"the @contextmanager block around a later break ({manager.gen}) "
                           "is entered for real by the frame code")
    raise Unsupported("resume", f"pdyn cannot rebuild {manager} outside the trace: the with block around "
                      "the break cannot be re-entered")


def _resumed_mode(codegen: ResumeCodegen, manager: AutocastVariable | InferenceModeVariable) -> str:
    """The graph leaves the block at its end; the frame code enters it again (the step runs in it)
    and hands the resume function that mode's `__exit__` (pdyn/trace/variables/amp_resume.py)."""
    node, _ = manager.entered[-1]
    if isinstance(manager, AutocastVariable):
        if manager.args[0] not in AMP_DEVICES:
            raise Unsupported("resume", f"pdyn resumes autocast blocks of {', '.join(AMP_DEVICES)} only")
        kind, args, leave = "autocast", manager.args, torch.amp._exit_autocast
    else:
        kind, args, leave = "inference_mode", (manager.mode,), torch.autograd.grad_mode._exit_inference_mode
    graph = node.graph
    graph.call_function(leave, (node,)).meta["loc"] = node.meta.get("loc")
    return f"{codegen.constant(ResumedMode, 'ResumedMode')}({kind!r}, {codegen.constant(args, 'args')}).__exit__"


def check_handled_exception(tx: InstructionTranslator) -> None:
    """A break in an `except` or `finally` body handling an exception the trace raised: its resume
    function would need that exception as the one being handled (a bare `raise`, `sys.exc_info()`,
    the context of a new exception), and the object exists only in the trace."""
    if tx.handled_exc is not None:
        raise Unsupported("resume", "the break is in an except or finally block handling an exception "
                          "raised in the trace, which pdyn cannot hand to the resume function")


def plain_call(codegen: ResumeCodegen, code: types.CodeType, f_globals: dict[str, Any], cells: str | None,
               args: list[str]) -> str:
    """A call of a resume function without pdyn's hook (it takes the frame's cells as its closure)."""
    if cells is None:
        fn = codegen.constant(types.FunctionType(code, f_globals), "resume_raised")
    else:
        fn = f"{codegen.constant(types.FunctionType, 'FunctionType')}({codegen.constant(code, 'code')}, " \
             f"{codegen.constant(f_globals, 'globals')}, {code.co_name!r}, None, {cells})"
    return f"{fn}({', '.join(args)})"


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
