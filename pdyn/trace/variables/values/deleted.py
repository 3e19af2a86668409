"""The value a trace "stores" when it deletes an attribute of an object that outlives it: reads
after it in the trace find the attribute gone, and the frame code replays the deletion."""

from __future__ import annotations

from typing import Any

from pdyn.trace.variables.base import VariableTracker


class DeletedAttrVariable(VariableTracker):
    """`del obj.name` on an input (or a module): recorded as the attribute's last store."""

    def __repr__(self) -> str:
        return "DeletedAttrVariable()"


def is_deleted(vt: VariableTracker | None) -> bool:
    return isinstance(vt, DeletedAttrVariable)


def replay_delete(obj: Any, name: str, raw: bool) -> None:
    """After the graph: the attribute is absent, as the trace left it. It may already be (set and
    deleted in the trace); `raw` skips a user class's own `__delattr__`, which the trace ran."""
    try:
        object.__delattr__(obj, name) if raw else delattr(obj, name)
    except (AttributeError, ValueError):  # ValueError: an empty cell's `cell_contents`
        pass
