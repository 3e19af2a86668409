"""CellVariable: a closure cell of a traced frame (a local read by a nested function)."""

from __future__ import annotations

from pdyn.trace.variables.base import VariableTracker


class CellVariable(VariableTracker):
    """A closure cell: `contents` is None while the variable is unbound; `source` is set for a
    cell of the optimized frame itself (a store to it would escape the trace)."""

    def __init__(self, contents: VariableTracker | None = None):
        self.contents = contents
