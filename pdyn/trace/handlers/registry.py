"""The opcode handler registry: each family module registers its handlers here on import; the
translator looks them up by opname."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from pdyn.bytecode.instructions import OPNAMES, Instruction

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator

Handler = Callable[["InstructionTranslator", Instruction], None]
HANDLERS: dict[str, Handler] = {}


def handler(opname: str) -> Callable[[Handler], Handler]:
    """Register `fn` as the semantics of `opname` (a name of pdyn's normalized instruction set)."""

    def register(fn: Handler) -> Handler:
        assert opname in OPNAMES, f"{opname} is not an instruction pdyn decodes"
        assert opname not in HANDLERS, f"second handler for {opname}: {fn.__qualname__}"
        HANDLERS[opname] = fn
        return fn

    return register
