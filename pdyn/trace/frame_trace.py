"""A frame's trace: a new OutputGraph and translator, the frame's locals (and its real closure
cells) wrapped, and the root translator run; and the same trace again, stopped at the instruction
that broke (what a graph break's frame code is built from).

What `L` holds is decided here: the frame's locals by name, and under `CLOSURE_KEY` its cells.
"""

from __future__ import annotations

import types
from typing import Any

from pdyn.base.config import Config
from pdyn.base.errors import Unsupported
from pdyn.shapes import validation
from pdyn.shapes.trace_plan import TracePlan
from pdyn.sources import ItemSource, LocalSource
from pdyn.trace.context import TraceContext
from pdyn.trace.output_graph import OutputGraph
from pdyn.trace.translator import InstructionTranslator
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.cell import CellVariable, real_cell

# L's entry holding the frame's closure (its cells, in co_freevars order): a resume function shares them
CLOSURE_KEY = "pdyn closure"


class _EmptyCell:
    """L's value of a free variable whose cell is empty (a local of the parent not yet assigned)."""

    def __repr__(self) -> str:
        return "<empty cell>"


EMPTY_CELL = _EmptyCell()


def title_of(code: types.CodeType) -> str:
    return f"{code.co_name}() at {code.co_filename}:{code.co_firstlineno}"


def new_output_graph(code: types.CodeType, plan: TracePlan | None, config: Config) -> OutputGraph:
    """A new trace's graph, with translation validation and the hint check as `config` says."""
    output = OutputGraph(code.co_name, TraceContext(plan))
    output.check_hints = config.check_hints
    if config.translation_validation:
        output.ctx.shape_env.validator = validation.Validator()
    return output


def trace_frame(tx: InstructionTranslator, f_locals: dict[str, Any]) -> VariableTracker | None:
    """Wrap the frame's locals and run the root translator (None where it stopped at `stop_at`)."""
    code = tx.code
    tx.locals = {name: tx.wrap(value, LocalSource(name)) for name, value in f_locals.items()
                 if name not in code.co_freevars and name != CLOSURE_KEY}
    tx.cells = {name: CellVariable(tx.locals.pop(name, None)) for name in code.co_cellvars}
    closure = f_locals.get(CLOSURE_KEY, ())
    for i, name in enumerate(code.co_freevars):   # the frame's real cells: stores replay through L
        tx.cells[name] = real_cell(tx, closure[i], ItemSource(LocalSource(CLOSURE_KEY), i),
                                   lambda v, name=name: tx.wrap(v, LocalSource(name)))
    return tx.run()


def retrace(code: types.CodeType, f_locals: dict[str, Any], f_globals: dict[str, Any], config: Config,
            plan: TracePlan | None, stop_at: int) -> InstructionTranslator:
    """The same trace again, stopped before root step `stop_at` (the one that broke)."""
    tx = InstructionTranslator(code, {}, f_globals, new_output_graph(code, plan, config), config)
    tx.stop_at = stop_at
    if trace_frame(tx, f_locals) is not None:
        raise Unsupported("retrace", "the trace did not reach its graph break again")
    return tx
