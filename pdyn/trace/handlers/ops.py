"""Arithmetic, comparison, identity, membership, unary and subscript opcodes.

Semantics: https://docs.python.org/3.12/library/dis.html
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

from pdyn.trace.handlers.registry import handler
from pdyn.bytecode.instructions import Instruction
from pdyn.ops import in_place_operator
from pdyn.trace.variables.base import fold
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.semantics import binary, contains, is_same

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


@handler("BINARY_OP")
def binary_op(tx: Tracer, inst: Instruction) -> None:
    rhs = tx.pop()
    lhs = tx.pop()
    fn = in_place_operator(inst.argval) if inst.inplace else inst.argval
    tx.push(binary(tx, fn, lhs, rhs))


@handler("COMPARE_OP")
def compare_op(tx: Tracer, inst: Instruction) -> None:
    rhs = tx.pop()
    lhs = tx.pop()
    tx.push(binary(tx, inst.argval, lhs, rhs))


@handler("IS_OP")
def is_op(tx: Tracer, inst: Instruction) -> None:
    rhs = tx.pop()
    lhs = tx.pop()
    tx.push(ConstantVariable(is_same(tx, lhs, rhs) != bool(inst.argval)))


@handler("CONTAINS_OP")
def contains_op(tx: Tracer, inst: Instruction) -> None:
    container = tx.pop()
    item = tx.pop()
    tx.push(ConstantVariable(contains(tx, item, container) != bool(inst.argval)))


def _unary(fn):  # type: ignore[no-untyped-def]
    def run(tx: Tracer, inst: Instruction) -> None:
        value = tx.pop()
        if value.is_python_constant():
            tx.push(fold(tx, fn, value.as_python_constant()))
        else:
            tx.push(value.unary_op(tx, fn))

    return run


for _opname, _fn in {"UNARY_NEGATIVE": operator.neg, "UNARY_INVERT": operator.invert,
                     "UNARY_POSITIVE": operator.pos}.items():
    handler(_opname)(_unary(_fn))


@handler("UNARY_NOT")
def unary_not(tx: Tracer, inst: Instruction) -> None:
    tx.push(ConstantVariable(not tx.pop().truth(tx)))


@handler("BINARY_SUBSCR")
def binary_subscr(tx: Tracer, inst: Instruction) -> None:
    key = tx.pop()
    container = tx.pop()
    tx.push(container.getitem(tx, key))


@handler("STORE_SUBSCR")
def store_subscr(tx: Tracer, inst: Instruction) -> None:
    key = tx.pop()
    container = tx.pop()
    value = tx.pop()
    container.setitem(tx, key, value)


@handler("DELETE_SUBSCR")
def delete_subscr(tx: Tracer, inst: Instruction) -> None:
    key = tx.pop()
    container = tx.pop()
    container.delitem(tx, key)
