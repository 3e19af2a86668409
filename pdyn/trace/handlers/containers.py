"""Building, extending and unpacking tuples, lists, sets, dicts, slices and strings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.handlers.registry import handler
from pdyn.bytecode.instructions import Instruction
from pdyn.trace.variables.containers.formatted import LazyStringVariable, formats_lazily
from pdyn.trace.variables.base import fold
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import (DictVariable, ListVariable, SliceVariable, TupleVariable, is_known,
                                              python_value, unhashable_type)
from pdyn.trace.variables.containers.sets import SetVariable
from pdyn.trace.variables.exceptions.exc_values import format_exception
from pdyn.trace.variables.values.symint import SymIntVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


@handler("BUILD_TUPLE")
def build_tuple(tx: Tracer, inst: Instruction) -> None:
    tx.push(TupleVariable(tx.popn(inst.argval)))


@handler("BUILD_LIST")
def build_list(tx: Tracer, inst: Instruction) -> None:
    tx.push(ListVariable(tx.popn(inst.argval)))


@handler("BUILD_SET")
def build_set(tx: Tracer, inst: Instruction) -> None:
    tx.push(SetVariable(tx.popn(inst.argval)))


def _key(tx: Tracer, vt):  # type: ignore[no-untyped-def]
    unhashable_type(vt)
    if not is_known(vt):
        raise Unsupported("dict_key", f"pdyn needs constant dict keys, got {vt}", loc=tx.loc())
    value = python_value(vt, "a dict key", tx.loc())
    try:
        hash(value)
    except TypeError as e:   # `{[]: 1}`: Python's error (the key is a constant, so catchable)
        raise UserException(e, tx.loc(), catchable=True) from None
    return value


@handler("BUILD_MAP")
def build_map(tx: Tracer, inst: Instruction) -> None:
    items = tx.popn(2 * inst.argval)
    tx.push(DictVariable({_key(tx, items[i]): items[i + 1] for i in range(0, len(items), 2)}))


@handler("BUILD_CONST_KEY_MAP")
def build_const_key_map(tx: Tracer, inst: Instruction) -> None:
    keys = tx.pop().as_python_constant()
    values = tx.popn(inst.argval)
    tx.push(DictVariable(dict(zip(keys, values))))


@handler("BUILD_SLICE")
def build_slice(tx: Tracer, inst: Instruction) -> None:
    parts = tx.popn(inst.argval)
    if any(isinstance(p, SymIntVariable) for p in parts):
        tx.push(SliceVariable(parts))  # symbolic in a tensor index, a value read elsewhere
        return
    if not all(p.is_python_constant() for p in parts):
        raise Unsupported("slice", f"pdyn needs constant slice bounds, got {parts}", loc=tx.loc())
    tx.push(ConstantVariable(slice(*(p.as_python_constant() for p in parts))))


@handler("BUILD_STRING")
def build_string(tx: Tracer, inst: Instruction) -> None:
    parts = tx.popn(inst.argval)
    if any(isinstance(p, LazyStringVariable) for p in parts):
        tx.push(LazyStringVariable.join(parts))
        return
    tx.push(ConstantVariable("".join(p.as_python_constant() for p in parts)))


@handler("FORMAT_VALUE")
def format_value(tx: Tracer, inst: Instruction) -> None:
    spec = tx.pop().as_python_constant() if inst.argval.has_spec else ""
    value = tx.pop()
    if formats_lazily(value):  # a size is read only if the string is used
        tx.push(LazyStringVariable([(value, inst.argval.conversion, spec)]))
        return
    text = format_exception(tx, value, inst.argval.conversion, spec)   # an input exception's str or repr
    if text is not None:
        tx.push(text)
        return
    if not is_known(value):
        raise Unsupported("format", f"pdyn can format only constants at trace time, not {value}", loc=tx.loc())
    convert = inst.argval.conversion or (lambda v: v)
    tx.push(fold(tx, lambda v: format(convert(v), spec), python_value(value, "str() or formatting", tx.loc())))


@handler("LIST_APPEND")
def list_append(tx: Tracer, inst: Instruction) -> None:
    value = tx.pop()
    # through the list's method: a list that crossed a graph break (3.12 inlines comprehensions) is
    # an input, and its appends are replayed after the graph
    tx.stack[-inst.argval].call_method(tx, "append", [value], {})


@handler("SET_ADD")
def set_add(tx: Tracer, inst: Instruction) -> None:
    value = tx.pop()
    tx.stack[-inst.argval].call_method(tx, "add", [value], {})


@handler("MAP_ADD")
def map_add(tx: Tracer, inst: Instruction) -> None:
    value = tx.pop()
    key = tx.pop()
    tx.stack[-inst.argval].setitem(tx, key, value)


@handler("LIST_EXTEND")
def list_extend(tx: Tracer, inst: Instruction) -> None:
    value = tx.pop()
    tx.stack[-inst.argval].call_method(tx, "extend", [value], {})


@handler("SET_UPDATE")
def set_update(tx: Tracer, inst: Instruction) -> None:
    value = tx.pop()
    tx.stack[-inst.argval].call_method(tx, "update", [value], {})


def _merge(tx: Tracer, inst: Instruction, strict: bool) -> None:
    other = tx.pop()
    target = tx.stack[-inst.argval]
    if not isinstance(other, DictVariable) or not isinstance(target, DictVariable):
        raise Unsupported("dict_merge", f"pdyn cannot merge {other} into a dict", loc=tx.loc())
    if strict:
        for k in other.items:
            if k in target.items:
                raise UserException(TypeError(f"got multiple values for keyword argument {k!r}"))
    target.items.update(other.items)
    target._mutate(tx)   # a dict display being built that crossed a graph break is an input


handler("DICT_UPDATE")(lambda tx, inst: _merge(tx, inst, strict=False))
handler("DICT_MERGE")(lambda tx, inst: _merge(tx, inst, strict=True))


@handler("LIST_TO_TUPLE")
def list_to_tuple(tx: Tracer, inst: Instruction) -> None:
    tx.push(TupleVariable(tx.pop().items))  # type: ignore[attr-defined]


@handler("UNPACK_SEQUENCE")
def unpack_sequence(tx: Tracer, inst: Instruction) -> None:
    items = tx.iterate(tx.pop())
    if len(items) != inst.argval:
        raise UserException(ValueError(f"expected {inst.argval} values to unpack, got {len(items)}"))
    for item in reversed(items):
        tx.push(item)


@handler("UNPACK_EX")
def unpack_ex(tx: Tracer, inst: Instruction) -> None:
    before, after = inst.argval.before, inst.argval.after
    items = tx.iterate(tx.pop())
    if len(items) < before + after:
        raise UserException(ValueError(f"not enough values to unpack (expected at least {before + after})"))
    middle = ListVariable(items[before:len(items) - after])
    for item in reversed(items[:before] + [middle] + items[len(items) - after:]):
        tx.push(item)
