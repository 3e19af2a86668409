"""CellVariable: a closure cell of a traced frame (a local read by a nested function)."""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Callable

from pdyn.sources import Source
from pdyn.trace.variables.base import VariableTracker

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


class CellVariable(VariableTracker):
    """A closure cell: `contents` is None while the variable is unbound. `outside` marks a real cell
    that outlives the trace (the frame's own, or one of an input function's `__closure__`): a store
    to it is replayed after the graph through `source`, the read of the cell object itself."""

    def __init__(self, contents: VariableTracker | None = None):
        self.contents = contents
        self.outside = False


def real_cell(tx: Tracer, cell: types.CellType, source: Source | None,
              wrap: Callable[[object], VariableTracker]) -> CellVariable:
    """The one tracker of a real cell object, however the trace reached it (the frame's closure,
    a function's `__closure__`), so a store through one path is seen through every other."""
    known = tx.ctx.real_cells.get(id(cell))
    if known is not None:
        return known[1]
    try:
        contents = cell.cell_contents
    except ValueError:
        vt = CellVariable(None)
    else:
        vt = CellVariable(wrap(contents))
    vt.source, vt.outside = source, True
    tx.ctx.real_cells[id(cell)] = (cell, vt)   # the cell itself is kept: its id stays its own
    return vt
