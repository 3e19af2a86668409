"""Context managers pdyn models itself: torch's grad-mode managers, contextlib.nullcontext and
@contextlib.contextmanager functions (autocast and inference_mode: amp_modes.py).

Entering one changes torch's global state for real at trace time (so fake tensors get eager's
`requires_grad`, and `torch.is_grad_enabled()` answers as eager's would) and records the same
change into the graph as a `torch._C._set_grad_enabled` call, so the compiled graph runs its ops
under the mode eager ran them in. `preserved_global_state` puts the trace-time state back however
a trace ends. User classes with Python `__enter__`/`__exit__` are not here: BEFORE_WITH inlines them.
"""

from __future__ import annotations

import contextlib
import types
from typing import TYPE_CHECKING, Any, Iterator

import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.sources import Source
from pdyn.trace.variables.contexts.amp_modes import amp_object, is_amp_object
from pdyn.trace.variables.torch.amp_state import preserved_amp_state
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.registry import rule
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.contexts.context_base import (BUILDERS, BoundHook, ContextClassVariable,  # noqa: F401
                                               ContextManagerVariable)
from pdyn.trace.variables.containers.core import DictVariable
from pdyn.trace.variables.iterators.generator import GeneratorVariable
from pdyn.trace.variables.restart import BreakSite, RestartTrace

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import FrameCodegen, ResumeCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

NONE = ConstantVariable(None)


@contextlib.contextmanager
def preserved_global_state() -> Iterator[None]:
    """Whatever the trace entered and did not leave (a break, an error), torch's state is put back."""
    grad = torch.is_grad_enabled()
    try:
        with preserved_amp_state():
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


class RestoreGradMode:
    """The `__exit__` of a grad-mode block entered in the graph, handed to the resume function of a
    break inside it: it puts back the mode seen before the block (exit never suppresses). A plain
    Python class, so a resume function traces it."""

    def __init__(self, prior: bool):
        self.prior = prior

    def __enter__(self) -> None:  # a with statement needs both; the resume function only exits
        return None

    def __exit__(self, *exc_info: Any) -> None:
        torch.set_grad_enabled(self.prior)


class NullContextVariable(ContextManagerVariable):
    """`contextlib.nullcontext(value)`: entering gives `value`, nothing else happens."""

    def __init__(self, cls: type, value: VariableTracker):
        super().__init__(cls)
        self.value = value

    def enter(self, tx: Tracer) -> VariableTracker:
        return self.value

    def exit_at_break(self, codegen: ResumeCodegen) -> str:
        return f"{codegen.constant(contextlib.nullcontext, 'nullcontext')}().__exit__"


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

    def exit(self, tx: Tracer, exc: VariableTracker) -> VariableTracker:
        if self.prior is not None:
            set_grad_mode(tx, self.prior)
        return NONE

    def exit_at_break(self, codegen: ResumeCodegen) -> str:
        if self.prior is None:
            return super().exit_at_break(codegen)
        return f"{codegen.constant(RestoreGradMode, 'RestoreGradMode')}({self.prior!r}).__exit__"

    def is_python_constant(self) -> bool:
        """no_grad and enable_grad objects hold no state: one stands for any other (a decorator's
        closure holds one); set_grad_enabled changes the mode when made, so it is no constant."""
        return self.cls is not torch.set_grad_enabled

    def as_python_constant(self) -> Any:
        if not self.is_python_constant():
            return super().as_python_constant()
        return self.cls()

    def clone(self, tx: Tracer) -> VariableTracker:
        """What torch's `@torch.no_grad()` decorator enters on each call of the function."""
        if self.cls is torch.set_grad_enabled:
            return GradModeVariable.set_now(tx, self.cls, self.mode)
        return GradModeVariable(self.cls, self.mode)


class GeneratorContextVariable(ContextManagerVariable):
    """A `@contextlib.contextmanager` function's manager: the generator runs in the trace up to its
    `yield` on entry, and from there to its end on exit (an exception raised in the block is
    thrown in at the `yield`), with contextlib's errors for a generator that yields twice or never."""

    def __init__(self, cls: type, gen: GeneratorVariable, parts: list[VariableTracker]):
        super().__init__(cls)
        self.gen = gen
        gen.managed = True
        self.parts = parts   # (function, args, kwargs): what contextlib's helper made it of
        self.entered_at: BreakSite | None = None   # the root's BEFORE_WITH that entered it

    def enter(self, tx: Tracer) -> VariableTracker:
        if tx.parent is None and tx.inst is not None and tx.inst.opname == "BEFORE_WITH":
            self.entered_at = tx.root_site()
        value = self.gen.next()
        if value is None:
            raise UserException(RuntimeError("generator didn't yield"), tx.loc(), catchable=True)
        return value

    def exit(self, tx: Tracer, exc: VariableTracker) -> VariableTracker:
        raised = None if exc.is_python_constant() and exc.as_python_constant() is None else exc
        if raised is None:
            if self.gen.next() is not None:
                raise UserException(RuntimeError("generator didn't stop"), tx.loc(), catchable=True)
            return ConstantVariable(False)
        value = raised.as_python_constant()
        try:
            if not self.gen.throw(UserException(value, tx.loc(), catchable=True)):
                return ConstantVariable(False)  # no handler at the yield: the exception goes on
            if self.gen.next() is not None:
                raise UserException(RuntimeError("generator didn't stop after throw()"), tx.loc(), catchable=True)
        except UserException as e:
            if e.exc is value:
                return ConstantVariable(False)  # re-raised as is: __exit__ lets it go on
            raise
        return ConstantVariable(True)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        """The manager again, made as contextlib's helper makes it: that makes the generator and
        runs none of its code, so only a manager whose generator has not started is rebuilt."""
        if self.gen.started:
            raise Unsupported("resume", f"pdyn cannot rebuild {self} outside the trace: its generator has started")
        parts = ", ".join(codegen.reconstruct(p) for p in self.parts)
        return codegen.once(self, f"{codegen.constant(self.cls, 'GeneratorContextManager')}({parts})")

    def exit_site(self) -> BreakSite:
        """Where the trace must break for a break inside this block to hand it over: before the
        root's BEFORE_WITH, so that the frame code enters it for real."""
        if self.entered_at is None:
            raise Unsupported("resume", f"pdyn cannot rebuild {self} outside the trace: the with block "
                              "around the break cannot be re-entered (it was not entered by a with statement of "
                              "the frame)")
        return self.entered_at

    def exit_at_break(self, codegen: ResumeCodegen) -> str:
        """Suspended at its yield in the trace: the trace restarts with a break before the with."""
        raise RestartTrace(self.exit_site(), f"the @contextmanager block around a later break ({self.gen}) "
                           "is entered for real by the frame code")


class RealGeneratorHook(VariableTracker):
    """The `__enter__` or `__exit__` of a real `@contextmanager` manager read from the frame (a with
    block a graph break's frame code entered): it runs a generator frame pdyn cannot trace, so a
    call of it is a graph break at the call, and the step function makes the call for real."""

    def __init__(self, source: Source):
        self.source = source

    def python_type(self) -> type:
        return types.MethodType

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        raise Unsupported("generator", "a @contextmanager generator entered outside the trace runs only for real: "
                          "its manager's hook is called as it is", loc=tx.loc())


def is_real_generator_hook(value: Any) -> bool:
    return isinstance(value, types.MethodType) and isinstance(value.__self__, contextlib._GeneratorContextManager) \
        and value.__func__ in (contextlib._GeneratorContextManager.__enter__,
                               contextlib._GeneratorContextManager.__exit__)


def _build_generator_context(tx: Tracer, cls: type, args: list[VariableTracker],
                             kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    if len(args) != 3 or kwargs or not isinstance(args[2], DictVariable):
        return None
    gen = args[0].call(tx, tx.iterate(args[1]), {str(k): v for k, v in args[2].items.items()})
    return GeneratorContextVariable(cls, gen, list(args)) if isinstance(gen, GeneratorVariable) else None


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


BUILDERS.update({
    torch.no_grad: _build_grad_mode, torch.enable_grad: _build_grad_mode,
    torch.set_grad_enabled: _build_grad_mode, contextlib.nullcontext: _build_null,
    contextlib._GeneratorContextManager: _build_generator_context,
})


def is_context_class(value: Any) -> bool:
    return isinstance(value, type) and value in BUILDERS


def is_context_object(value: Any) -> bool:
    """A grad-mode manager made before the trace (the one a `@torch.no_grad()` decorator holds),
    or a bound method of one (its `clone`)."""
    if is_amp_object(value):
        return True
    value = getattr(value, "__self__", value)
    return type(value) in (torch.no_grad, torch.enable_grad, torch.set_grad_enabled)


def context_object(value: Any) -> VariableTracker:
    """The tracker of such a manager: no_grad and enable_grad hold no state; set_grad_enabled its mode."""
    if hasattr(value, "__func__"):
        return BoundHook(context_object(value.__self__), value.__func__.__name__.strip("_"))  # type: ignore[arg-type]
    if is_amp_object(value):
        return amp_object(value)  # its arguments are fixed when made; NOTE: not guarded against edits
    kind = type(value)
    return GradModeVariable(kind, bool(value.mode) if kind is torch.set_grad_enabled else kind is torch.enable_grad)


@rule(torch._C._set_grad_enabled)
def _set_grad_enabled(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """What `torch.set_grad_enabled(mode)` does underneath, called directly."""
    if len(args) != 1 or kwargs or not args[0].is_python_constant():
        raise Unsupported("grad_mode", "pdyn cannot trace torch._C._set_grad_enabled with these arguments",
                          loc=tx.loc())
    GradModeVariable.set_now(tx, torch.set_grad_enabled, bool(args[0].as_python_constant()))
    return ConstantVariable(None)
