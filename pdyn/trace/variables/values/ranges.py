"""RangeVariable: `range(start, stop, step)` whose bounds are symbolic ints (sizes, int inputs).

A range is lazy: making one reads nothing. Iterating it unrolls the loop in the trace, so the
number of items must be known; that is a *loop count* read, pinned by an equality guard
(`s0 == 5`) and never a graph break, whatever the recompile policy says of the size: the code after
a break would unroll on the same count and pin it just the same, so a break there costs one more
graph and saves no compile. `len(r)` of a unit step stays symbolic. A range crossing a graph break
is rebuilt from its bounds' sizes, so the resume function receives them with their provenance.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable

import sympy

from pdyn.base.errors import SourceLoc
from pdyn.guards.guards import TypeGuard
from pdyn.shapes.trace_plan import TracePlan
from pdyn.sources import AttrSource, SizeSource, Source
from pdyn.trace.variables.base import VariableTracker, fold, sizes_in
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.values.symint import SymIntVariable, sym_binary

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

FIELDS = ("start", "stop", "step")


def loop_count(vt: VariableTracker, why: str, loc: SourceLoc | None, plan: TracePlan | None) -> Any:
    """The value of `vt`, an int the trace unrolls a loop on: a symbolic one is pinned by an
    equality guard (a bool read), so a size seen changing is pinned here rather than broken at. A
    size the user asked to keep dynamic (`dynamic=True`, `mark_dynamic`) is a value read: a break."""
    if not isinstance(vt, SymIntVariable) or vt.pytype is not int:
        return vt.as_python_constant()
    env = vt.env
    origins = [env.origins[s][0] for s in env.free(vt.expr) if env.origins.get(s)]
    dynamic, changing = (plan.dynamic, plan.changing) if plan is not None else (None, frozenset())
    if any(env.policy.on_value_read(o) == "break" and (dynamic is True or o not in changing) for o in origins):
        return vt.value_read(why, loc)
    value = vt.hint()
    env.evaluate_bool(sympy.Eq(vt.expr, value, evaluate=False), loc or vt.loc, why)
    return value


class RangeVariable(VariableTracker):
    """A range whose (start, stop, step) `bounds` are trackers: symbolic ints or constants."""

    def __init__(self, bounds: tuple[VariableTracker, VariableTracker, VariableTracker], loc: SourceLoc | None,
                 plan: TracePlan | None, source: Any = None):
        self.bounds = bounds
        self.loc = loc
        self.plan = plan
        self.source = source

    def sizes_held(self, source: Source, depth: int) -> list[tuple[SizeSource, Any]]:
        """Rebuilt from its bounds: `L['r'].stop` is the parent's size."""
        return sizes_in(((AttrSource(source, f), item) for f, item in zip(FIELDS, self.bounds)), depth)

    @staticmethod
    def make(tx: Tracer, args: list[VariableTracker]) -> RangeVariable:
        one, zero = ConstantVariable(1), ConstantVariable(0)
        start, stop, step = (zero, args[0], one) if len(args) == 1 else (args[0], args[1], one) \
            if len(args) == 2 else tuple(args)
        return RangeVariable((start, stop, step), tx.loc(), tx.ctx.plan)

    def python_type(self) -> type:
        return range

    def value(self, tx: Tracer | None, why: str) -> range:
        """The range itself: each symbolic bound pinned as a loop count."""
        loc = tx.loc() if tx is not None else self.loc
        return range(*(loop_count(b, why, loc, self.plan) for b in self.bounds))

    def is_python_constant(self) -> bool:
        return True   # where Python needs the range itself (str(r), r == other), its bounds are pinned

    def as_python_constant(self) -> Any:
        return self.value(None, "range()")

    def binary_op(self, tx: Tracer, fn: Callable[[Any, Any], Any], other: VariableTracker) -> VariableTracker:
        return fold(tx, fn, self.value(tx, "range()"), other.as_python_constant())

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        return [tx.wrap_constant(v) for v in self.value(tx, "range()")]

    def length(self, tx: Tracer) -> VariableTracker:
        start, stop, step = self.bounds
        if step.is_python_constant() and step.as_python_constant() == 1:
            # len(range(a, b)) is max(b - a, 0): which side of 0 is a bool read, the rest stays symbolic
            diff = sym_binary(tx, operator.sub, stop, start)
            if isinstance(diff, SymIntVariable) and sym_binary(tx, operator.ge, diff, ConstantVariable(0)).truth(tx):
                return diff
        return fold(tx, len, self.value(tx, "len() of a range"))

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name in FIELDS:
            return self.bounds[FIELDS.index(name)]
        return fold(tx, getattr, self.value(tx, f"range.{name}"), name)

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        return fold(tx, lambda r, k: r[k], self.value(tx, "an index into a range"), key.as_python_constant())

    def contains(self, tx: Tracer, item: VariableTracker) -> bool:
        return ConstantVariable(self.value(tx, "`in` a range")).contains(tx, item)

    def truth(self, tx: Tracer) -> bool:
        return self.length(tx).truth(tx)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        if self.source is not None:
            return codegen.source_expr(self.source)
        return f"{codegen.constant(range, 'range')}({', '.join(b.reconstruct(codegen) for b in self.bounds)})"

    def __repr__(self) -> str:
        return f"RangeVariable({', '.join(map(repr, self.bounds))})"



def wrap_range(tx: Tracer, value: range, source: Any) -> RangeVariable:
    """A range input (a resume function's, or any frame's): its bounds are int inputs, symbolic
    until the trace reads them, so a range built from sizes keeps their provenance."""
    tx.ctx.add_guard(TypeGuard(source, range, loc=tx.loc()))
    bounds = tuple(tx.wrap(getattr(value, f), AttrSource(source, f)) for f in FIELDS)
    return RangeVariable(bounds, tx.loc(), tx.ctx.plan, source)  # type: ignore[arg-type]
