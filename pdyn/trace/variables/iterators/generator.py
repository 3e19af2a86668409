"""GeneratorVariable: a generator made during the trace (a generator expression, or a call of a
generator function). Its body runs lazily in a child translator, up to one `yield` per `next()`,
so consumers that stop early (`any`, `next`, a `break`) see what CPython would. Across a graph
break one not started is made again by the same call (which runs no user code); a started one
restarts the trace with a break where it was made (variables/restart.py). A frame whose trace
leaves one suspended inside a try or with block of its body runs eagerly: CPython runs that
block's `finally`, `except GeneratorExit` or `__exit__` when it frees the generator, a moment the
trace cannot place.
"""

from __future__ import annotations

import builtins
import types
from typing import TYPE_CHECKING

from pdyn.base.errors import Unsupported
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import IteratorVariable
from pdyn.trace.variables.restart import BreakSite, RestartTrace

if TYPE_CHECKING:
    from pdyn.bytecode.instructions import Instruction
    from pdyn.trace.frame_codegen import FrameCodegen, ResumeCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer


class GeneratorVariable(IteratorVariable):
    """A suspended generator frame: `translator` stops after each YIELD_VALUE."""

    def __init__(self, translator: Tracer, fn: VariableTracker | None = None,
                 args: list[VariableTracker] | None = None, kwargs: dict[str, VariableTracker] | None = None,
                 made_at: BreakSite | None = None):
        super().__init__([])
        self.translator = translator
        self.done = False
        self.fn, self.args, self.kwargs = fn, args or [], kwargs or {}   # the call that made it
        self.made_at = made_at   # the root instruction running when it was made
        self.managed = False     # a @contextmanager's: its manager's exit runs it to its end
        self.suspended_at: Instruction | None = None   # the YIELD_VALUE it is suspended at, if any

    @property
    def started(self) -> bool:
        return self.translator.steps > 0

    def reconstruct_resumed(self, codegen: ResumeCodegen) -> str:
        return self.reconstruct(codegen)   # no item list: made again, or the trace restarts

    def reconstruct(self, codegen: FrameCodegen) -> str:
        """The same call again where the generator has not started; else a restart (see the module)."""
        if self.started or self.fn is None:
            why = f"the generator {self.translator.code.co_name}() the trace started is live across a graph break"
            if self.made_at is not None:
                raise RestartTrace(self.made_at, why)
            raise Unsupported("resume", f"pdyn cannot rebuild {why}")
        parts = [codegen.reconstruct(a) for a in self.args] + \
            [f"{k}={codegen.reconstruct(v)}" for k, v in self.kwargs.items()]
        return codegen.once(self, f"{codegen.reconstruct(self.fn)}({', '.join(parts)})")

    def python_type(self) -> type:
        return types.GeneratorType

    def next(self) -> VariableTracker | None:
        if self.done:
            return None
        tx = self.translator
        self.suspended_at = None
        while tx.yielded is None and tx.return_value is None:
            tx.step()
        if tx.yielded is None:
            self.done = True
            return None
        self.suspended_at = tx.instructions[tx.ip - 1]
        value, tx.yielded = tx.yielded, None
        tx.push(ConstantVariable(None))  # what the suspended `yield` evaluates to: nothing was sent
        return value

    def throw(self, error: BaseException) -> bool:
        """`gen.throw(exc)` at the suspended `yield`: False where no handler covers it (the
        generator is then finished), else the generator resumes in the handler (`next()` runs it)."""
        tx = self.translator
        at = tx.instructions[tx.ip - 1]
        self.suspended_at = None
        if self.done or at.handler is None:
            self.done = True
            return False
        tx.unwind(at, error)  # type: ignore[arg-type]
        return True

    def cleanup_pending(self) -> bool:
        """Suspended at a `yield` inside a try or with block of its body: closing it runs user code."""
        at = self.suspended_at
        return not self.done and at is not None and at.exc_kind == "try" and not _close_is_silent(self.translator, at)

    def __repr__(self) -> str:
        return f"GeneratorVariable({self.translator.code.co_name})"


GENERATOR_END = ("CALL_INTRINSIC_1", "STOPITERATION_ERROR")   # 3.12's handler around a generator's body


def _close_is_silent(tx: Tracer, at: Instruction) -> bool:
    """Whether closing a generator suspended at `at` (GeneratorExit thrown there) runs no user code:
    the handler is `except` clauses none of which matches GeneratorExit (`Sequence.__iter__`'s
    `except IndexError`), with no try or with block around them. Anything else (a finally, a with,
    a bare except, a class read some other way) counts as code that runs."""
    ins = tx.instructions
    i = at.handler
    if i is None or ins[i].opname != "PUSH_EXC_INFO":
        return False
    i += 1
    while True:
        classes = []
        while i < len(ins) and ins[i].opname == "LOAD_GLOBAL":
            name = ins[i].argval
            classes.append(tx.f_globals.get(name, getattr(builtins, name, None)) if isinstance(name, str) else None)
            i += 1
        if i < len(ins) and ins[i].opname == "BUILD_TUPLE" and ins[i].argval == len(classes):
            i += 1
        if not classes or i + 1 >= len(ins) or ins[i].opname != "CHECK_EXC_MATCH":
            return False
        if any(not isinstance(c, type) or issubclass(GeneratorExit, c) for c in classes):
            return False
        jump = ins[i + 1]
        if not (jump.opname.startswith("POP_JUMP") and "FALSE" in jump.opname) or jump.target is None:
            return False
        i = jump.target
        if ins[i].opname == "RERAISE":   # no clause matched: the handler's cleanup re-raises it on
            j = ins[i].handler
            while j is not None and j < len(ins) and ins[j].opname != "RERAISE":
                j += 1
            # and nothing around it: no handler, or 3.12's StopIteration-to-RuntimeError one
            outer = None if j is None or j >= len(ins) else ins[j].handler
            return j is not None and j < len(ins) and (outer is None or ins[outer].opname in GENERATOR_END)


def check_no_pending_cleanup(generators: list[GeneratorVariable], returned: bool) -> None:
    """At the end of the root trace (its return, or the step a graph break stops before): a
    generator left suspended in a try or with block runs that block's cleanup when CPython frees
    it, at a moment the trace cannot place (and a break's frame code, holding it, would delay):
    the frame runs eagerly. A @contextmanager's generator is checked at a return only (a break
    inside its with block hands the block over, trace/breaks/blocks.py)."""
    for gen in generators:
        if gen.cleanup_pending() and (returned or not gen.managed):
            raise Unsupported("generator_cleanup", f"the generator {gen.translator.code.co_name}() is left suspended "
                              "inside a try or with block, whose cleanup CPython runs when it frees the generator; "
                              "pdyn runs the frame eagerly")
