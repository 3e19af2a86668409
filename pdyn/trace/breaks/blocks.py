"""A graph break inside a `with` or `try` block: what the frame code hands the resume functions.

The step function runs the breaking instruction in the state the graph left (a grad mode the block
entered is still set: the graph sets it and nothing has left the block yet). The resume functions
continue inside the user's blocks (`pdyn.bytecode.transform`): for a `with` block, the `__exit__`
on the stack is one of theirs, so the frame code rebuilds it as a real callable: each manager pdyn
models says how (`ContextManagerVariable.exit_at_break`: grad mode, nullcontext, autocast and
inference_mode, a `@contextmanager` block restarting the trace); a user manager's bound `__exit__`
is rebuilt as any value is.

Inside exception handlers, the step function runs while the frame code handles each exception the
handlers handle (raised again, nested as the handlers are), and the resume function, called outside
any handler, re-enters each handler by raising its exception in its prologue (`ExcInfoSlot` marks
the handlers' stack slots; `pdyn.bytecode.transform._reenter_handler`). An exception the trace made
is rebuilt from its type and args where that makes the same object as far as code can tell.
"""

from __future__ import annotations

from pdyn.base.errors import Unsupported
from pdyn.trace.frame_codegen import ResumeCodegen
from pdyn.trace.handlers.exceptions import value_of
from pdyn.trace.translator import InstructionTranslator
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.exceptions.exc_slot import ExcInfoSlot
from pdyn.trace.variables.values.constant import is_constant_value


class HandlerCodegen(ResumeCodegen):
    """The frame code of a break inside handlers (`except` bodies, `finally`'s exception path): each
    exception being handled is a name bound first, an input's read from its source, a trace-made one
    rebuilt from its type and args; every reconstruction of the trace's object (the `as e` local,
    `finally`'s copy on the stack) is that name, so the object stays one."""

    def __init__(self) -> None:
        super().__init__()
        self.rebuilt: dict[int, str] = {}   # id of a trace-made exception -> its name in the frame code

    def reconstruct(self, vt: VariableTracker) -> str:
        value = getattr(vt, "value", None)
        if vt.source is None and id(value) in self.rebuilt:
            return self.rebuilt[id(value)]
        if vt.source is None and isinstance(value, BaseException) and _why_not_rebuilt(value, None) is None:
            return self.rebuild(value)   # one handled earlier and kept: a new object per call, as eager's
        return super().reconstruct(vt)

    def rebuild(self, value: BaseException) -> str:
        """A name bound to `type(value)(*value.args)`, for each reconstruction of `value`."""
        args = "".join(f"{self.constant(a, 'arg')}, " for a in value.args)
        name = self.rebuilt[id(value)] = f"v{len(self.lines)}"
        self.lines.append(f"{name} = {self.constant(type(value), 'exc_type')}({args})")
        return name


def handler_slots(tx: InstructionTranslator) -> list[ExcInfoSlot]:
    """The handlers the break is in, outermost first (their slots on the stack)."""
    slots = [vt for vt in tx.stack if isinstance(vt, ExcInfoSlot)]
    chain: VariableTracker | None = None
    for slot in slots:
        if slot.previous is not chain:
            raise Unsupported("resume", "the break is in an exception handler pdyn cannot re-enter "
                              "(its slot does not follow the handler around it)")
        chain = slot.handled
    if chain is not tx.handled_exc:
        raise Unsupported("resume", "the break is in an exception handler whose slot is not on the stack")
    return slots


def handled_exceptions(codegen: HandlerCodegen, slots: list[ExcInfoSlot]) -> list[str]:
    """A name in the frame code for the exception each handler handles, outermost first."""
    names: list[str] = []
    enclosing: object = None
    for slot in slots:
        vt = slot.handled
        value = value_of(vt)
        if vt.source is not None:
            name = f"v{len(codegen.lines)}"
            codegen.lines.append(f"{name} = {codegen.reconstruct(vt)}")
        else:
            why = _why_not_rebuilt(value, enclosing)
            if why is not None:
                raise Unsupported("resume", f"the break is in an except or finally block handling {value!r}, "
                                  f"which pdyn cannot hand to the resume function: {why}")
            name = codegen.rebuild(value)  # type: ignore[arg-type]
        names.append(name)
        enclosing = value
    return names


def _why_not_rebuilt(value: object, enclosing: object) -> str | None:
    """Why `type(value)(*value.args)` raised inside the handler of `enclosing` (whose raise sets the
    context) is not `value` as the code after the break could tell, or None."""
    if not isinstance(value, BaseException):
        return "it is no exception object"
    kind = type(value)
    if any(next(c for c in kind.__mro__ if m in vars(c)).__module__ != "builtins" for m in ("__init__", "__new__")):
        return "its class has its own __init__ or __new__"
    if isinstance(value, BaseExceptionGroup) or not all(is_constant_value(a) for a in value.args):
        return "its args are not constants"
    if getattr(value, "__dict__", None) or value.__cause__ is not None or value.__suppress_context__:
        return "it carries attributes or a cause"
    if value.__context__ is not None and value.__context__ is not enclosing:
        return "its context is not the exception handled around it"
    try:
        trial = kind(*value.args)
    except Exception:
        return "its class does not take its args back"
    # a builtin keeps some keyword-only fields (AttributeError's name and obj) outside its args
    if str(trial) != str(value) or any(getattr(trial, f, None) is not getattr(value, f, None)
                                       for f in ("name", "obj", "path", "name_from")):
        return "it keeps more than its args"
    return None


def in_handlers(handled: list[str], lines: list[str]) -> list[str]:
    """`lines` run while handling each exception of `handled` in turn (raised inside the handler of
    the one before, as the user's code raised it), so `sys.exc_info()`, a bare `raise` and a new
    exception's context see what eager sees."""
    for name in reversed(handled):
        lines = ["try:", f"    raise {name}", "except BaseException:", *(f"    {line}" for line in lines)]
    return lines
