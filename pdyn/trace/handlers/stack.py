"""Stack shuffling opcodes: POP_TOP, PUSH_NULL, COPY, SWAP, END_FOR."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdyn.trace.handlers.registry import handler
from pdyn.bytecode.instructions import Instruction
from pdyn.trace.variables.base import NULL

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


@handler("POP_TOP")
def pop_top(tx: Tracer, inst: Instruction) -> None:
    tx.pop()


@handler("PUSH_NULL")
def push_null(tx: Tracer, inst: Instruction) -> None:
    tx.push(NULL)


@handler("COPY")
def copy(tx: Tracer, inst: Instruction) -> None:
    tx.push(tx.stack[-inst.argval])


@handler("SWAP")
def swap(tx: Tracer, inst: Instruction) -> None:
    i = inst.argval
    tx.stack[-1], tx.stack[-i] = tx.stack[-i], tx.stack[-1]


@handler("END_FOR")
def end_for(tx: Tracer, inst: Instruction) -> None:
    tx.popn(2)
