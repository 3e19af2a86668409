"""Arithmetic, comparison, identity, membership, unary and subscript opcodes.

Semantics: https://docs.python.org/3.12/library/dis.html
"""

from __future__ import annotations

import operator

from pdyn.bytecode_tracer import InstructionTranslator as Tracer, handler
from pdyn.errors import Unsupported
from pdyn.handlers.dispatch import contains, fold, is_same
from pdyn.instructions import Instruction
from pdyn.ops import in_place_operator
from pdyn.variables.base import VariableTracker
from pdyn.variables.constant import ConstantVariable


@handler("BINARY_OP")
def binary_op(tx: Tracer, inst: Instruction) -> None:
    rhs = tx.pop()
    lhs = tx.pop()
    fn = in_place_operator(inst.argval) if inst.inplace else inst.argval
    tx.push(tx.binary(fn, lhs, rhs))


@handler("COMPARE_OP")
def compare_op(tx: Tracer, inst: Instruction) -> None:
    rhs = tx.pop()
    lhs = tx.pop()
    tx.push(tx.binary(inst.argval, lhs, rhs))


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
            tx.push(fold(fn, value.as_python_constant()))
        else:
            tx.push(value.unary_op(tx, fn))

    return run


for _opname, _fn in {"UNARY_NEGATIVE": operator.neg, "UNARY_INVERT": operator.invert,
                     "UNARY_POSITIVE": operator.pos}.items():
    handler(_opname)(_unary(_fn))


@handler("UNARY_NOT")
def unary_not(tx: Tracer, inst: Instruction) -> None:
    tx.push(ConstantVariable(not tx.pop().truth(tx)))


def getitem(tx: Tracer, container: VariableTracker, key: VariableTracker) -> VariableTracker:
    method = getattr(container, "getitem", None)
    if method is not None:
        return method(tx, key)
    if container.is_python_constant() and key.is_python_constant():
        return fold(operator.getitem, container.as_python_constant(), key.as_python_constant())
    raise Unsupported("getitem", f"pdyn cannot index {container}", loc=tx.loc())


@handler("BINARY_SUBSCR")
def binary_subscr(tx: Tracer, inst: Instruction) -> None:
    key = tx.pop()
    container = tx.pop()
    tx.push(getitem(tx, container, key))


@handler("STORE_SUBSCR")
def store_subscr(tx: Tracer, inst: Instruction) -> None:
    key = tx.pop()
    container = tx.pop()
    value = tx.pop()
    method = getattr(container, "setitem", None)
    if method is None:
        raise Unsupported("setitem", f"pdyn cannot assign an item of {container}", loc=tx.loc())
    method(tx, key, value)


@handler("DELETE_SUBSCR")
def delete_subscr(tx: Tracer, inst: Instruction) -> None:
    key = tx.pop()
    container = tx.pop()
    method = getattr(container, "delitem", None)
    if method is None:
        raise Unsupported("delitem", f"pdyn cannot delete an item of {container}", loc=tx.loc())
    method(tx, key)
