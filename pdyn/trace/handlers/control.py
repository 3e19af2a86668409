"""Jumps, loops, returns, raises and asserts (with blocks and handlers: exceptions.py)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from pdyn.base.errors import Unsupported
from pdyn.trace.handlers.registry import handler
from pdyn.bytecode.instructions import Instruction
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.builtins import ClassVariable
from pdyn.trace.variables.containers.core import IteratorVariable
from pdyn.trace.variables.iterators.live_iterators import make_iterator
from pdyn.trace.variables.iterators.generator import GeneratorVariable
from pdyn.trace.variables.semantics import is_same
from pdyn.trace.handlers.exceptions import raise_exception

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

NONE = ConstantVariable(None)


@handler("JUMP")
def jump(tx: Tracer, inst: Instruction) -> None:
    tx.ip = inst.target  # type: ignore[assignment]


def _pop_jump(when: bool, test):  # type: ignore[no-untyped-def]
    def run(tx: Tracer, inst: Instruction) -> None:
        if test(tx, tx.pop()) == when:
            tx.ip = inst.target

    return run


def _truth(tx: Tracer, vt: VariableTracker) -> bool:
    return vt.truth(tx)


def _is_none(tx: Tracer, vt: VariableTracker) -> bool:
    return is_same(tx, vt, NONE)


handler("POP_JUMP_IF_FALSE")(_pop_jump(False, _truth))
handler("POP_JUMP_IF_TRUE")(_pop_jump(True, _truth))
handler("POP_JUMP_IF_NONE")(_pop_jump(True, _is_none))
handler("POP_JUMP_IF_NOT_NONE")(_pop_jump(False, _is_none))


def _jump_or_pop(when: bool):  # type: ignore[no-untyped-def]
    def run(tx: Tracer, inst: Instruction) -> None:
        if tx.stack[-1].truth(tx) == when:
            tx.ip = inst.target
        else:
            tx.pop()

    return run


handler("JUMP_IF_FALSE_OR_POP")(_jump_or_pop(False))
handler("JUMP_IF_TRUE_OR_POP")(_jump_or_pop(True))


@handler("GET_ITER")
def get_iter(tx: Tracer, inst: Instruction) -> None:
    tx.push(make_iterator(tx, tx.pop()))


@handler("FOR_ITER")
def for_iter(tx: Tracer, inst: Instruction) -> None:
    it = tx.stack[-1]
    if not isinstance(it, IteratorVariable):  # an iterator from outside the trace (a resume function's
        raise Unsupported("iterator_input", f"pdyn cannot advance {it} at trace time",  # stack)
                          hint="iterate inside the compiled function", loc=tx.loc())
    item = it.next()
    if item is None:
        tx.pop()
        tx.ip = inst.target  # type: ignore[assignment]
    else:
        tx.push(item)


@handler("RETURN_VALUE")
def return_value(tx: Tracer, inst: Instruction) -> None:
    tx.return_value = tx.pop()


@handler("RETURN_CONST")
def return_const(tx: Tracer, inst: Instruction) -> None:
    tx.return_value = tx.wrap_constant(inst.argval)


@handler("RETURN_GENERATOR")
def return_generator(tx: Tracer, inst: Instruction) -> None:
    if tx.parent is None:
        raise Unsupported("generator", "pdyn runs generator functions eagerly", loc=tx.loc())
    tx.push(NONE)  # the first resume of a generator sends None, which the next POP_TOP drops


@handler("YIELD_VALUE")
def yield_value(tx: Tracer, inst: Instruction) -> None:
    tx.yielded = tx.pop()  # GeneratorVariable.next() stops here and pushes the sent None


@handler("GET_YIELD_FROM_ITER")
def get_yield_from_iter(tx: Tracer, inst: Instruction) -> None:
    """`yield from x`: a generator is delegated to as it is, anything else through iter(x)."""
    value = tx.pop()
    tx.push(value if isinstance(value, GeneratorVariable) else make_iterator(tx, value))


@handler("SEND")
def send(tx: Tracer, inst: Instruction) -> None:
    """`yield from`'s step: the next item of the delegate goes on the stack (then YIELD_VALUE); an
    exhausted delegate is replaced by its return value and the loop is left. Only None is sent,
    as `next()` sends (a generator's `send(v)` is not traced)."""
    sent = tx.pop()
    receiver = tx.stack[-1]
    if not (isinstance(sent, ConstantVariable) and sent.value is None):
        raise Unsupported("generator_send", "pdyn traces `yield from` only when nothing is sent", loc=tx.loc())
    if not isinstance(receiver, IteratorVariable):
        raise Unsupported("iterator_input", f"pdyn cannot advance {receiver} at trace time", loc=tx.loc())
    item = receiver.next()
    if item is not None:
        tx.push(item)
        return
    returned = receiver.translator.return_value if isinstance(receiver, GeneratorVariable) else None
    returned = returned if returned is not None else NONE
    if sys.version_info >= (3, 12):  # the jump lands on END_SEND, which drops the receiver
        tx.push(returned)
    else:
        tx.stack[-1] = returned
    tx.ip = inst.target  # type: ignore[assignment]


def end_send(tx: Tracer, inst: Instruction) -> None:
    value = tx.pop()
    tx.pop()
    tx.push(value)


if sys.version_info >= (3, 12):
    handler("END_SEND")(end_send)


@handler("LOAD_ASSERTION_ERROR")
def load_assertion_error(tx: Tracer, inst: Instruction) -> None:
    tx.push(ClassVariable(AssertionError))


@handler("RAISE_VARARGS")
def raise_varargs(tx: Tracer, inst: Instruction) -> None:
    if inst.argval == 0:  # a bare `raise`: the exception being handled
        if tx.handled_exc is None:  # the compiled function's caller may be handling one
            raise Unsupported("raise", "pdyn traces a bare `raise` only inside an except block", loc=tx.loc())
        raise_exception(tx, tx.handled_exc, again=True)
    cause = tx.pop() if inst.argval == 2 else None
    raise_exception(tx, tx.pop(), cause)
