"""`match` statements: GET_LEN, MATCH_SEQUENCE, MATCH_MAPPING, MATCH_KEYS, MATCH_CLASS.

Each answers from what the trackers already know (the Python type, guarded where it came from an
input; the length; the attributes), so a pattern reads only what it names: `case (b, t, c)` on
`x.shape` asks its rank, and a size becomes a guard only where the pattern or its body uses it.
Semantics: https://docs.python.org/3.11/library/dis.html and PEP 634.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pdyn.base.errors import UserException
from pdyn.bytecode.instructions import Instruction
from pdyn.trace.handlers.registry import handler
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import TupleVariable
from pdyn.trace.variables.semantics import contains

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

NONE = ConstantVariable(None)
SEQUENCE_FLAG = 1 << 5   # Py_TPFLAGS_SEQUENCE: what `case [...]` accepts (never str, bytes)
MAPPING_FLAG = 1 << 6    # Py_TPFLAGS_MAPPING: what `case {...}` accepts
# `case int(x)`: for these builtins one positional pattern matches the subject itself
MATCH_SELF = (bool, bytearray, bytes, dict, float, frozenset, int, list, set, str, tuple)


def _flag(tx: Tracer, subject: VariableTracker, flag: int) -> bool:
    kind = subject.python_type()
    return bool(kind.__flags__ & flag)


@handler("GET_LEN")
def get_len(tx: Tracer, inst: Instruction) -> None:
    tx.push(tx.stack[-1].length(tx))


@handler("MATCH_SEQUENCE")
def match_sequence(tx: Tracer, inst: Instruction) -> None:
    tx.push(ConstantVariable(_flag(tx, tx.stack[-1], SEQUENCE_FLAG)))


@handler("MATCH_MAPPING")
def match_mapping(tx: Tracer, inst: Instruction) -> None:
    tx.push(ConstantVariable(_flag(tx, tx.stack[-1], MAPPING_FLAG)))


@handler("MATCH_KEYS")
def match_keys(tx: Tracer, inst: Instruction) -> None:
    """Above the subject, a tuple of keys: push the tuple of their values, or None if one is missing."""
    keys = tx.stack[-1]
    subject = tx.stack[-2]
    values = []
    for key in tx.iterate(keys):
        if not contains(tx, key, subject):
            tx.push(NONE)
            return
        values.append(subject.getitem(tx, key))
    tx.push(TupleVariable(values))


def _class_value(tx: Tracer, cls: VariableTracker) -> type:
    value = cls.as_python_constant() if cls.is_python_constant() else None
    if not isinstance(value, type):
        raise UserException(TypeError("called match pattern must be a class"), tx.loc())
    return value


def _attribute(tx: Tracer, subject: VariableTracker, name: str) -> VariableTracker | None:
    """`subject.name`, or None where reading it raises AttributeError (the pattern fails)."""
    try:
        return subject.getattr(tx, name)
    except UserException as e:
        if isinstance(e.exc, AttributeError):
            return None
        raise


@handler("MATCH_CLASS")
def match_class(tx: Tracer, inst: Instruction) -> None:
    """Pops the keyword names, the class and the subject; pushes the matched attributes (positional
    ones through `__match_args__`, then keywords), or None."""
    names = tx.pop().as_python_constant()
    cls = _class_value(tx, tx.pop())
    subject = tx.pop()
    count = inst.argval
    if not issubclass(subject.python_type(), cls):
        tx.push(NONE)
        return
    attrs: list[Any] = []
    if count:
        if cls in MATCH_SELF and not hasattr(cls, "__match_args__"):
            if count > 1:
                raise UserException(TypeError(f"{cls.__name__}() accepts 1 positional sub-pattern ({count} given)"),
                                    tx.loc())
            attrs.append(subject)
        else:
            match_args = getattr(cls, "__match_args__", ())
            if type(match_args) is not tuple:
                raise UserException(TypeError(f"{cls.__name__}.__match_args__ must be a tuple "
                                              f"(got {type(match_args).__name__})"), tx.loc())
            if count > len(match_args):
                raise UserException(TypeError(f"{cls.__name__}() accepts {len(match_args)} positional "
                                              f"sub-pattern{'' if len(match_args) == 1 else 's'} ({count} given)"),
                                    tx.loc())
            attrs += list(match_args[:count])
    for name in names:
        if name in attrs:
            raise UserException(TypeError(f"{cls.__name__}() got multiple sub-patterns for attribute {name!r}"),
                                tx.loc())
    values = []
    for item in [*attrs, *names]:
        value = item if isinstance(item, VariableTracker) else _attribute(tx, subject, item)
        if value is None:
            tx.push(NONE)
            return
        values.append(value)
    tx.push(TupleVariable(values))
