"""What a backend did with one graph, kept on the graph (`gm.meta[REPORT]`) for `pdyn.stats()`
and `pdyn.explain`: the kernels it generated, the nodes it ran as torch calls and why, or why it
ran the whole graph with torch. A backend that leaves no report (eager) lowered nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

REPORT = "pdyn_backend_report"
# gm.meta: set by the entry's cache; a backend calls it with the report of a graph it compiled
# after the entry was made (a training graph's backward, compiled at its first backward)
COUNT_LATER = "pdyn_count_later"


@dataclass(frozen=True)
class BackendReport:
    backend: str
    kernels: int = 0  # distinct kernels generated for the graph
    on_torch: str | None = None  # why the whole graph runs with torch (None: it was lowered)
    externs: tuple[Any, ...] = ()  # graph_lowering.ExternCall per node run as a torch call
    lowered: int = 0  # nodes lowered into kernels (or index arithmetic, or size expressions)
    notes: list[str] = field(default_factory=list)

    @property
    def nodes_on_torch(self) -> int:
        return len(self.externs)

    @property
    def library_calls(self) -> int:
        return sum(e.kind == "library" for e in self.externs)

    def lines(self) -> list[str]:
        if self.on_torch is not None:
            return [f"{self.backend}: runs wholly with torch: {self.on_torch}"]
        out = [f"{self.backend}: {self.lowered} nodes lowered, {self.kernels} kernels, "
               f"{self.nodes_on_torch} torch calls ({self.library_calls} library)"]
        out += [f"  torch call: {e}" for e in self.externs]
        return out


def report_of(gm: Any) -> BackendReport | None:
    meta = getattr(gm, "meta", None)
    return meta.get(REPORT) if isinstance(meta, dict) else None
