"""DELETE_ATTR: `del obj.name` (attr_delete.py has the semantics, shared with `delattr`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pdyn.bytecode.instructions import Instruction
from pdyn.trace.handlers.registry import handler
from pdyn.trace.variables.objects.attr_delete import delete_attr

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


@handler("DELETE_ATTR")
def delete_attr_op(tx: Tracer, inst: Instruction) -> None:
    delete_attr(tx, tx.pop(), inst.argval)
