"""with blocks, exception handlers and imports: BEFORE_WITH, WITH_EXCEPT_START, PUSH_EXC_INFO,
POP_EXCEPT, CHECK_EXC_MATCH, RERAISE, IMPORT_NAME, IMPORT_FROM.

The jump into a handler is the translator's (`InstructionTranslator.unwind`); these are the
instructions the handler code runs. The exception being handled is a trace-time Python object.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import TYPE_CHECKING

from pdyn.base.errors import Unsupported, UserException
from pdyn.bytecode.instructions import Instruction
from pdyn.bytecode.transform import is_redelivery
from pdyn.sources import AttrSource, ModuleSource
from pdyn.trace.handlers.registry import handler
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.contexts.context_managers import BoundHook, ContextManagerVariable
from pdyn.trace.variables.exceptions.exc_fields import caught_here
from pdyn.trace.variables.exceptions.exc_slot import ExcInfoSlot

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

NONE = ConstantVariable(None)


@handler("BEFORE_WITH")
def before_with(tx: Tracer, inst: Instruction) -> None:
    manager = tx.pop()
    if isinstance(manager, ContextManagerVariable):
        tx.push(BoundHook(manager, "exit"))
        tx.push(manager.enter(tx))
        return
    enter = manager.getattr(tx, "__enter__")  # a Python __enter__/__exit__ is inlined when called
    tx.push(manager.getattr(tx, "__exit__"))
    tx.push(enter.call(tx, [], {}))


@handler("WITH_EXCEPT_START")
def with_except_start(tx: Tracer, inst: Instruction) -> None:
    """Below the exception: the previous exception, the raising instruction and `__exit__`."""
    exc = tx.stack[-1]
    exit_fn = tx.stack[-4]
    value = value_of(exc)
    if exc.source is None:
        kind, tb = tx.wrap_constant(type(value)), tx.wrap_constant(value.__traceback__)
    else:  # an input exception (a resume function's): its type is guarded, its traceback read from it
        kind = tx.wrap_constant(exc.python_type())
        tb = tx.wrap(value.__traceback__, AttrSource(exc.source, "__traceback__"))  # type: ignore[union-attr]
    tx.push(exit_fn.call(tx, [kind, exc, tb], {}))


@handler("PUSH_EXC_INFO")
def push_exc_info(tx: Tracer, inst: Instruction) -> None:
    exc = caught_here(tx.pop())
    tx.push(ExcInfoSlot(tx.handled_exc, exc))
    tx.push(exc)
    tx.handled_exc = exc


@handler("POP_EXCEPT")
def pop_except(tx: Tracer, inst: Instruction) -> None:
    previous = tx.pop()
    if isinstance(previous, ExcInfoSlot):
        tx.handled_exc = previous.previous
        return
    tx.handled_exc = None if previous is NONE or (previous.is_python_constant()
                                                   and previous.as_python_constant() is None) else previous


@handler("CHECK_EXC_MATCH")
def check_exc_match(tx: Tracer, inst: Instruction) -> None:
    kinds = tx.pop().as_python_constant()
    exc = tx.stack[-1]
    if exc.is_python_constant():
        matched = isinstance(exc.as_python_constant(), kinds)
    else:  # an input exception (a resume function's): its type is guarded
        matched = issubclass(exc.python_type(), kinds)
    tx.push(ConstantVariable(matched))


@handler("STOPITERATION_ERROR")
def stopiteration_error(tx: Tracer, inst: Instruction) -> None:
    """3.12: a StopIteration escaping a generator becomes RuntimeError, as PEP 479 says."""
    value = tx.stack[-1].as_python_constant()
    if isinstance(value, StopIteration):
        error = RuntimeError("generator raised StopIteration")
        error.__cause__ = value
        tx.stack[-1] = tx.wrap_constant(error)


@handler("RERAISE")
def reraise(tx: Tracer, inst: Instruction) -> None:
    exc = tx.pop()  # a nonzero arg only says where the raising instruction's position lies (peeked)
    raise_exception(tx, exc, again=True)


def value_of(exc: VariableTracker) -> object:
    """The exception object (or class) `exc` tracks: a trace-time one, or an input's real one."""
    return exc.as_python_constant() if exc.is_python_constant() else getattr(exc, "value", None)


def raise_exception(tx: Tracer, exc: VariableTracker, cause: VariableTracker | None = None,
                    again: bool = False) -> None:
    """`raise exc [from cause]` of a trace-time exception (or class): catchable in the trace. With
    `again` (RERAISE, a bare `raise`), the exception being handled raised again, which keeps its
    context. An input exception is raised only again, or by a resume prologue re-entering its
    handler (it was raised for real before): neither sets a context or cause that is not there."""
    value = value_of(exc)
    if exc.source is not None and isinstance(value, BaseException):
        if again or (tx.inst is not None and is_redelivery(tx.code, tx.inst.index)):
            raise UserException(value, tx.loc(), catchable=True, tracker=exc)
        # raising sets __context__/__cause__ on the object: an argument's would change for real
        raise Unsupported("raise", f"pdyn cannot trace raising an exception object it did not make ({exc})",
                          loc=tx.loc())
    if isinstance(value, type) and issubclass(value, BaseException):
        value = value()
    if not isinstance(value, BaseException):
        if value is not None or exc.is_python_constant():
            raise UserException(TypeError("exceptions must derive from BaseException"), tx.loc(), catchable=True)
        raise Unsupported("raise", f"pdyn cannot trace raising {exc}", loc=tx.loc())
    if cause is not None:
        reason = cause.as_python_constant()
        if isinstance(reason, type) and issubclass(reason, BaseException):
            reason = reason()
        value.__cause__ = reason
    handled = None if tx.handled_exc is None else value_of(tx.handled_exc)
    if handled is not None and value is not handled and not again:
        value.__context__ = handled  # a trace-time object: an input handled exception is only referred to
    raise UserException(value, tx.loc(), catchable=True)


@handler("IMPORT_NAME")
def import_name(tx: Tracer, inst: Instruction) -> None:
    """`import a.b` of a module already imported: the module is a constant (importing it again
    runs nothing). Anything that would run an import is left to Python."""
    fromlist = tx.pop().as_python_constant()
    level = tx.pop().as_python_constant()
    name = inst.argval
    if level:
        package = tx.f_globals.get("__package__") or ""
        try:
            name = importlib.util.resolve_name("." * level + name, package)
        except (ImportError, ValueError) as e:
            raise Unsupported("import", f"pdyn cannot resolve a relative import: {e}", loc=tx.loc()) from None
    module = sys.modules.get(name)
    if module is None:
        raise Unsupported("import", f"pdyn cannot trace importing {name!r}, which is not imported yet",
                          hint="import it at the top of the module", loc=tx.loc())
    top = name if fromlist or level else name.partition(".")[0]
    tx.push(tx.wrap(sys.modules[top], ModuleSource(top)))


@handler("IMPORT_FROM")
def import_from(tx: Tracer, inst: Instruction) -> None:
    module = tx.stack[-1]
    try:
        tx.push(module.getattr(tx, inst.argval))
    except UserException:
        full = f"{module.as_python_constant().__name__}.{inst.argval}"
        if full not in sys.modules:
            raise Unsupported("import", f"pdyn cannot trace importing {full!r}, which is not imported yet",
                              loc=tx.loc()) from None
        tx.push(tx.wrap(sys.modules[full], ModuleSource(full)))
