"""Calls and function creation: CALL (with folded KW_NAMES), CALL_FUNCTION_EX, MAKE_FUNCTION."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdyn.base.errors import Unsupported
from pdyn.trace.handlers.registry import handler
from pdyn.bytecode.instructions import Instruction
from pdyn.trace.variables.base import NULL
from pdyn.trace.variables.containers.core import DictVariable
from pdyn.trace.variables.functions.user_functions import UserFunctionVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


@handler("CALL")
def call(tx: Tracer, inst: Instruction) -> None:
    args = tx.popn(inst.argval)
    upper = tx.pop()
    lower = tx.pop()
    fn = upper if lower is NULL else lower
    if lower is not NULL:
        args = [upper, *args]
    n_kw = len(inst.kw_names)
    kwargs = dict(zip(inst.kw_names, args[len(args) - n_kw:])) if n_kw else {}
    positional = args[: len(args) - n_kw]
    tx.push(fn.call(tx, positional, kwargs))


@handler("CALL_FUNCTION_EX")
def call_function_ex(tx: Tracer, inst: Instruction) -> None:
    kwargs_vt = tx.pop() if inst.argval.has_kwargs else DictVariable({})
    args = tx.iterate(tx.pop())
    fn = tx.pop()
    null = tx.pop()
    assert null is NULL, f"CALL_FUNCTION_EX expects NULL below the callable, found {null}"
    if not isinstance(kwargs_vt, DictVariable) or not all(isinstance(k, str) for k in kwargs_vt.items):
        raise Unsupported("call_kwargs", f"pdyn cannot unpack {kwargs_vt} as keyword arguments", loc=tx.loc())
    tx.push(fn.call(tx, args, dict(kwargs_vt.items)))


@handler("MAKE_FUNCTION")
def make_function(tx: Tracer, inst: Instruction) -> None:
    code = tx.pop().as_python_constant()
    parts = inst.argval
    closure = tx.pop().items if parts.closure else []  # type: ignore[attr-defined]
    if parts.annotations:
        tx.pop()  # annotations: not needed to run the function
    kwdefaults = tx.pop() if parts.kwdefaults else None
    defaults = tx.pop().items if parts.defaults else []  # type: ignore[attr-defined]
    tx.push(UserFunctionVariable.nested(code, tx.f_globals, defaults, kwdefaults, closure))
