"""GeneratorVariable: a generator made during the trace (a generator expression, or a call of a
generator function). Its body runs lazily in a child translator, up to one `yield` per `next()`,
so consumers that stop early (`any`, `next`, a `break`) see what CPython would.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING

from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.constant import ConstantVariable
from pdyn.trace.variables.containers import IteratorVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


class GeneratorVariable(IteratorVariable):
    """A suspended generator frame: `translator` stops after each YIELD_VALUE."""

    def __init__(self, translator: Tracer):
        super().__init__([])
        self.translator = translator
        self.done = False

    def python_type(self) -> type:
        return types.GeneratorType

    def next(self) -> VariableTracker | None:
        if self.done:
            return None
        tx = self.translator
        while tx.yielded is None and tx.return_value is None:
            tx.step()
        if tx.yielded is None:
            self.done = True
            return None
        value, tx.yielded = tx.yielded, None
        tx.push(ConstantVariable(None))  # what the suspended `yield` evaluates to: nothing was sent
        return value

    def throw(self, error: BaseException) -> bool:
        """`gen.throw(exc)` at the suspended `yield`: False where no handler covers it (the
        generator is then finished), else the generator resumes in the handler (`next()` runs it)."""
        tx = self.translator
        at = tx.instructions[tx.ip - 1]
        if self.done or at.handler is None:
            self.done = True
            return False
        tx.unwind(at, error)  # type: ignore[arg-type]
        return True

    def __repr__(self) -> str:
        return f"GeneratorVariable({self.translator.code.co_name})"
