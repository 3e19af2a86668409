"""The recompile policy: per code object, what the next trace may assume, from the history of
earlier compiles. A pure function of (config, history, this call's values): no tracing, no I/O.

Rules (DESIGN.md, "Recompile policy"): every input dim starts dynamic (`dynamic=None`); a dim whose
value Python reads is specialized until it is seen changing, from then on (at `backoff_after`
distinct values) its value reads are graph breaks; `dynamic=False` makes every dim static;
`dynamic=True` never specializes on a read; at `recompile_limit` compiles the code runs eagerly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from pdyn.config import Config
from pdyn.symbolic_shapes import ReadPolicy, SymbolOrigin


@dataclass
class CodeHistory:
    """What earlier compiles of one code object specialized, and to which values."""

    compiles: int = 0
    specialized: dict[str, set[int]] = field(default_factory=dict)   # origin expr -> values pinned

    def record(self, pinned: dict[str, int]) -> None:
        self.compiles += 1
        for origin, value in pinned.items():
            self.specialized.setdefault(origin, set()).add(value)


@dataclass(frozen=True)
class RunEager:
    """Do not trace: run the frame eagerly (the recompile limit was reached)."""

    reason: str


@dataclass(frozen=True)
class TracePlan:
    """What one trace assumes: whether dims start static, and how size reads resolve."""

    dynamic: bool | None
    specialize_on_read: str
    changing: frozenset[str]          # origins seen changing: their value reads break the graph
    decisions: tuple[str, ...] = ()   # for the recompile log, e.g. "L['x'].size(1): specialized -> graph break"

    @property
    def static_inputs(self) -> bool:
        return self.dynamic is False

    def read_policy(self, marked_dynamic: Callable[[SymbolOrigin], bool]) -> ReadPolicy:
        def on_value_read(origin: SymbolOrigin) -> str:
            if self.dynamic is True or origin.expr() in self.changing or marked_dynamic(origin):
                return "break"
            return "specialize"

        def on_bool_read(origin: SymbolOrigin) -> str:
            if self.dynamic is True or origin.expr() in self.changing or marked_dynamic(origin):
                return "guard"
            return "specialize" if self.specialize_on_read == "any" else "guard"

        return ReadPolicy(on_value_read, on_bool_read)


def decide(config: Config, history: CodeHistory, dynamic: bool | None,
           current_value: Callable[[str], object]) -> TracePlan | RunEager:
    """The plan for the next trace; `current_value(origin)` reads an origin in this call."""
    if history.compiles >= config.recompile_limit:
        return RunEager(f"reached the recompile limit ({config.recompile_limit})")
    changing = []
    decisions = []
    for origin, values in history.specialized.items():
        now = current_value(origin)
        if len(values | {now}) >= config.backoff_after and now not in values:
            changing.append(origin)
            after = "graph break" if config.specialize_on_read == "value" else "guarded expression"
            decisions.append(f"{origin}: specialized -> {after} on value reads"
                             if after == "graph break" else f"{origin}: specialized -> guarded expression")
    return TracePlan(dynamic, config.specialize_on_read, frozenset(changing), tuple(decisions))
