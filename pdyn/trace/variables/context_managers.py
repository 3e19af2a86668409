"""Context managers pdyn models itself: torch's grad-mode managers and contextlib.nullcontext.

Entering one changes torch's global state for real at trace time (so fake tensors get eager's
`requires_grad`, and `torch.is_grad_enabled()` answers as eager's would) and records the same
change into the graph as a `torch._C._set_grad_enabled` call, so the compiled graph runs its ops
under the mode eager ran them in. `preserved_global_state` puts the trace-time state back however
a trace ends. User classes with Python `__enter__`/`__exit__` are not here: BEFORE_WITH inlines them.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Iterator

import torch

from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.builtins import ClassVariable
from pdyn.trace.variables.constant import ConstantVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

NONE = ConstantVariable(None)


@contextlib.contextmanager
def preserved_global_state() -> Iterator[None]:
    """Whatever the trace entered and did not leave (a break, an error), torch's state is put back."""
    grad = torch.is_grad_enabled()
    try:
        yield
    finally:
        torch._C._set_grad_enabled(grad)


def set_grad_mode(tx: Tracer, mode: bool) -> None:
    """Grad mode becomes `mode`, at trace time and in the graph at this point."""
    if torch.is_grad_enabled() == mode:
        return
    node = tx.output.graph.call_function(torch._C._set_grad_enabled, (mode,))
    tx.output.annotate(node, tx.loc())
    torch._C._set_grad_enabled(mode)


class ContextManagerVariable(VariableTracker):
    """A context manager whose `__enter__` and `__exit__` pdyn runs itself."""

    def __init__(self, cls: type):
        self.cls = cls

    def python_type(self) -> type:
        return self.cls

    def enter(self, tx: Tracer) -> VariableTracker:
        return NONE

    def exit(self, tx: Tracer) -> VariableTracker:
        """Leave the block (normally or by an exception); the value says whether to suppress it."""
        return NONE

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name == "__enter__":
            return BoundHook(self, "enter")
        if name == "__exit__":
            return BoundHook(self, "exit")
        return super().getattr(tx, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.cls.__name__})"


class BoundHook(VariableTracker):
    """`manager.__enter__` or `manager.__exit__` (what BEFORE_WITH leaves on the stack)."""

    def __init__(self, manager: ContextManagerVariable, which: str):
        self.manager = manager
        self.which = which

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return self.manager.enter(tx) if self.which == "enter" else self.manager.exit(tx)

    def __repr__(self) -> str:
        return f"BoundHook({self.manager}.{self.which})"


class NullContextVariable(ContextManagerVariable):
    """`contextlib.nullcontext(value)`: entering gives `value`, nothing else happens."""

    def __init__(self, cls: type, value: VariableTracker):
        super().__init__(cls)
        self.value = value

    def enter(self, tx: Tracer) -> VariableTracker:
        return self.value


class GradModeVariable(ContextManagerVariable):
    """`torch.no_grad()`, `torch.enable_grad()`, `torch.set_grad_enabled(mode)`. The last sets the
    mode when constructed, as torch's does (so it works as a plain call too); the others on entry.
    Each exit restores the mode seen before the change."""

    def __init__(self, cls: type, mode: bool, prior: bool | None = None):
        super().__init__(cls)
        self.mode = mode
        self.prior = prior

    @classmethod
    def set_now(cls, tx: Tracer, kind: type, mode: bool) -> GradModeVariable:
        vt = cls(kind, mode, torch.is_grad_enabled())
        set_grad_mode(tx, mode)
        return vt

    def enter(self, tx: Tracer) -> VariableTracker:
        if self.prior is None or self.cls is not torch.set_grad_enabled:
            self.prior = torch.is_grad_enabled()
            set_grad_mode(tx, self.mode)
        return NONE

    def exit(self, tx: Tracer) -> VariableTracker:
        if self.prior is not None:
            set_grad_mode(tx, self.prior)
        return NONE


def _build_grad_mode(tx: Tracer, cls: type, args: list[VariableTracker],
                     kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    if cls is torch.set_grad_enabled:
        mode = (args[0] if args else kwargs.get("mode"))
        if mode is None or kwargs.keys() - {"mode"} or len(args) > 1 or not mode.is_python_constant():
            return None
        return GradModeVariable.set_now(tx, cls, bool(mode.as_python_constant()))
    if args or kwargs:
        return None  # `torch.no_grad(fn)`: the decorator form
    return GradModeVariable(cls, cls is torch.enable_grad)


def _build_null(tx: Tracer, cls: type, args: list[VariableTracker],
                kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    value = args[0] if args else kwargs.get("enter_result", NONE)
    if len(args) > 1 or kwargs.keys() - {"enter_result"}:
        return None
    return NullContextVariable(cls, value)


BUILDERS: dict[type, Any] = {
    torch.no_grad: _build_grad_mode, torch.enable_grad: _build_grad_mode,
    torch.set_grad_enabled: _build_grad_mode, contextlib.nullcontext: _build_null,
}


class ContextClassVariable(ClassVariable):
    """A context manager class pdyn models: calling it builds the tracker above; anything else
    (isinstance, class attributes) is the class's."""

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        vt = BUILDERS[self.value](tx, self.value, args, kwargs)
        return vt if vt is not None else super().call(tx, args, kwargs)


def is_context_class(value: Any) -> bool:
    return isinstance(value, type) and value in BUILDERS
