"""The tracker protocol of a context manager pdyn models itself (`enter`, `exit`, and the bound
`__enter__`/`__exit__` BEFORE_WITH leaves on the stack). Its kinds live in context_managers.py
(grad mode, nullcontext, @contextmanager) and amp_modes.py (autocast, inference_mode).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pdyn.base.errors import Unsupported
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.builtins import ClassVariable
from pdyn.trace.variables.values.constant import ConstantVariable

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import ResumeCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

NONE = ConstantVariable(None)
# each modelled manager class -> its builder (args, kwargs -> a tracker, or None: call the class)
BUILDERS: dict[type, Any] = {}


class ContextManagerVariable(VariableTracker):
    """A context manager whose `__enter__` and `__exit__` pdyn runs itself."""

    def __init__(self, cls: type):
        self.cls = cls

    def python_type(self) -> type:
        return self.cls

    def enter(self, tx: Tracer) -> VariableTracker:
        return NONE

    def exit(self, tx: Tracer, exc: VariableTracker) -> VariableTracker:
        """Leave the block (`exc` None, or the exception raised in it); the value says whether
        to suppress the exception."""
        return NONE

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name in ("__enter__", "__exit__", "clone"):
            return BoundHook(self, name.strip("_"))
        if name == "__class__":
            return ContextClassVariable(self.cls)
        return super().getattr(tx, name)

    def clone(self, tx: Tracer) -> VariableTracker:
        raise Unsupported("context_manager", f"pdyn cannot copy {self}", loc=tx.loc())

    def exit_at_break(self, codegen: ResumeCodegen) -> str:
        """The frame code's `__exit__` of this block, around a graph break inside it: the resume
        function continues inside the block and leaves it with this callable."""
        raise Unsupported("resume", f"pdyn cannot rebuild {self} outside the trace: the with block around "
                          "the break cannot be re-entered")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.cls.__name__})"


class BoundHook(VariableTracker):
    """`manager.__enter__` or `manager.__exit__` (what BEFORE_WITH leaves on the stack)."""

    def __init__(self, manager: ContextManagerVariable, which: str):
        self.manager = manager
        self.which = which

    def rebuilt_at_break(self, codegen: ResumeCodegen) -> str:
        return self.manager.exit_at_break(codegen) if self.which == "exit" else super().rebuilt_at_break(codegen)

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        if self.which == "exit":
            return self.manager.exit(tx, args[1] if len(args) > 1 else NONE)
        return getattr(self.manager, self.which)(tx)  # type: ignore[no-any-return]

    def is_python_constant(self) -> bool:
        return self.manager.is_python_constant()

    def as_python_constant(self) -> Any:
        return getattr(self.manager.as_python_constant(), self.which if self.which == "clone" else f"__{self.which}__")

    def __repr__(self) -> str:
        return f"BoundHook({self.manager}.{self.which})"


class ContextClassVariable(ClassVariable):
    """A context manager class pdyn models: calling it builds the tracker above; anything else
    (isinstance, class attributes) is the class's."""

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        vt = BUILDERS[self.value](tx, self.value, args, kwargs)
        return vt if vt is not None else super().call(tx, args, kwargs)
