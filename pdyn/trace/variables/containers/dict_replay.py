"""A dict the trace changed, given its final contents after the graph in place: iterators over it
(a loop a graph break carried, one outside the frame) stay valid where Python's would."""

from __future__ import annotations

from typing import Any


def replay_dict(d: dict[Any, Any], new: dict[Any, Any]) -> None:
    """Make `d` hold `new` (the trace's final state of it) as the program's own writes would: values
    set in place, keys deleted and appended, so an iterator over `d` (a loop the break carried, or
    one outside the frame) stays valid where Python's would. Only a reordering rebuilds it."""
    if [k for k in d if k in new] + [k for k in new if k not in d] == list(new):
        for k in [k for k in d if k not in new]:
            del d[k]
        for k, v in new.items():
            if k not in d or d[k] is not v:
                d[k] = v
        return
    d.clear()
    d.update(new)
