"""ExplainOutput: what one `pdyn.explain(fn)(*args)` call compiled: graphs, breaks, guards, over the
frame and the resume functions its graph breaks called."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch.fx


@dataclass(frozen=True)
class BreakReason:
    """Why a graph ended early (a break) or a frame ran eagerly: the reason and the user's file:line."""

    reason: str
    key: str
    filename: str
    lineno: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}: {self.reason} [{self.key}]"


@dataclass
class ExplainOutput:
    graph_count: int
    graphs: list[torch.fx.GraphModule]
    graph_break_count: int
    break_reasons: list[BreakReason]
    guards: list[str]
    compiles: int
    frame_code: list[str] = field(default_factory=list)
    # which sizes are static and why: "L['x'].size(0) specialized to 5 by range() at f.py:3", and
    # the equalities ops assumed between dims
    shape_decisions: list[str] = field(default_factory=list)

    @classmethod
    def from_entries(cls, entries: list[Any]) -> ExplainOutput:
        graphs = [e.graph_module for e in entries if e.graph_module is not None]
        reasons = []
        for e in entries:
            why = e.eager_reason or e.break_reason
            if why is not None:
                loc = why.loc
                reasons.append(BreakReason(why.message, why.key, loc.filename if loc else "?", loc.lineno if loc else 0))
        return cls(len(graphs), graphs, len(reasons), reasons, [e.guard.source for e in entries], len(entries),
                   [e.frame_source for e in entries], [d for e in entries for d in e.shape_decisions])

    def __str__(self) -> str:
        lines = [f"compiles: {self.compiles}", f"graphs: {self.graph_count}",
                 f"graph breaks: {self.graph_break_count}"]
        for reason in self.break_reasons:
            lines.append(f"  break at {reason}")
        lines.append("sizes: " + ("every dim dynamic" if not self.shape_decisions else ""))
        lines += [f"  {d}" for d in self.shape_decisions]
        for i, gm in enumerate(self.graphs):
            lines.append(f"graph {i + 1}:")
            lines.append(gm.print_readable(print_output=False).rstrip())
        for text in self.guards:
            lines.append(text.rstrip())
        return "\n".join(lines)
