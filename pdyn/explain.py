"""ExplainOutput: what one `pdyn.explain(fn)(*args)` call compiled: graphs, breaks, guards, over the
frame and the resume functions its graph breaks called."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch.fx

from pdyn.backends.report import BackendReport, report_of


@dataclass(frozen=True)
class BreakReason:
    """Why a graph ended early (a break) or a frame ran eagerly: the reason and the user's file:line."""

    reason: str
    key: str
    filename: str
    lineno: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}: {self.reason} [{self.key}]"


@dataclass(frozen=True)
class FrameReport:
    """One compiled entry of one frame (the function, or a resume function or callee of its
    breaks): the torch ops its graph captured and the break that ended it, or why it ran eagerly."""

    function: str                 # "f() at file.py:3"
    ops: tuple[str, ...]          # the captured ops' names, in graph order
    break_reason: BreakReason | None = None
    eager: bool = False           # the whole frame runs eagerly (break_reason says why)

    def __str__(self) -> str:
        ops = f"{len(self.ops)} ops captured" + (f" ({', '.join(self.ops)})" if self.ops else "")
        end = "" if self.break_reason is None else \
            f"; runs eagerly: {self.break_reason}" if self.eager else f"; graph break at {self.break_reason}"
        return f"{self.function}: {ops}{end}"


def _reason(why: Any) -> BreakReason:
    loc = why.loc
    return BreakReason(why.message, why.key, loc.filename if loc else "?", loc.lineno if loc else 0)


def _op_name(node: torch.fx.Node) -> str:
    target = node.target
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))


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
    # per compiled entry, in compile order: the ops captured and the break that ended its graph
    frames: list[FrameReport] = field(default_factory=list)
    # per graph, what the backend did (None for a backend that lowers nothing, such as eager): the
    # kernels, each node run as a torch call and why, or why the whole graph ran with torch
    backends: list[BackendReport | None] = field(default_factory=list)

    @property
    def ops_captured(self) -> int:
        return sum(len(f.ops) for f in self.frames)

    @classmethod
    def from_entries(cls, entries: list[Any], titles: list[str] | None = None,
                     skipped: list[tuple[str, Any]] = ()) -> ExplainOutput:
        """`titles`: the function each entry was compiled for ("f() at file.py:3"), in the same order;
        `skipped`: (function, break) of each frame that runs without a graph after a break inside a
        loop (no entry, no compile; listed as a frame that runs eagerly, its calls through pdyn)."""
        graphs = [e.graph_module for e in entries if e.graph_module is not None]
        reasons = [_reason(e.eager_reason or e.break_reason) for e in entries
                   if (e.eager_reason or e.break_reason) is not None]
        frames = []
        for e, title in zip(entries, titles or ["?"] * len(entries)):
            why = e.eager_reason or e.break_reason
            ops = () if e.graph_module is None else tuple(
                _op_name(n) for n in e.graph_module.graph.nodes if n.op in ("call_function", "call_method", "call_module"))
            frames.append(FrameReport(title, ops, _reason(why) if why is not None else None, e.eager_reason is not None))
        for title, why in skipped:
            reasons.append(_reason(why))
            frames.append(FrameReport(title, (), _reason(why), eager=True))
        return cls(len(graphs), graphs, len(reasons), reasons, [e.guard.source for e in entries], len(entries),
                   [e.frame_source for e in entries], [d for e in entries for d in e.shape_decisions], frames,
                   [report_of(gm) for gm in graphs])

    def __str__(self) -> str:
        lines = [f"compiles: {self.compiles}", f"graphs: {self.graph_count}",
                 f"graph breaks: {self.graph_break_count}"]
        for reason in self.break_reasons:
            lines.append(f"  break at {reason}")
        lines.append(f"ops captured: {self.ops_captured}")
        lines += [f"  {frame}" for frame in self.frames]
        lines.append("sizes: " + ("every dim dynamic" if not self.shape_decisions else ""))
        lines += [f"  {d}" for d in self.shape_decisions]
        for i, gm in enumerate(self.graphs):
            lines.append(f"graph {i + 1}:")
            report = self.backends[i] if i < len(self.backends) else None
            lines += report.lines() if report is not None else []
            lines.append(gm.print_readable(print_output=False).rstrip())
        for text in self.guards:
            lines.append(text.rstrip())
        return "\n".join(lines)
