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
from pdyn.trace_plan import TracePlan


@dataclass
class CodeHistory:
    """What earlier compiles of one code object specialized, and to which values."""

    compiles: int = 0
    specialized: dict[str, set[int]] = field(default_factory=dict)   # origin -> values a value read pinned
    compared: dict[str, set[int]] = field(default_factory=dict)      # origin -> values an equality pinned
    changed: set[str] = field(default_factory=set)   # origins seen changing: they stay dynamic from then on

    def record(self, pinned: dict[str, tuple[int, bool]], changing: frozenset[str] = frozenset()) -> None:
        """`pinned`: origin -> (value, whether a value read pinned it rather than an equality);
        `changing`: the origins the plan of this compile treated as changing."""
        self.compiles += 1
        self.changed |= changing
        for origin, (value, by_value_read) in pinned.items():
            table = self.specialized if by_value_read else self.compared
            table.setdefault(origin, set()).add(value)


@dataclass(frozen=True)
class RunEager:
    """Do not trace: run the frame eagerly (the recompile limit was reached)."""

    reason: str


def decide(config: Config, history: CodeHistory, dynamic: bool | None,
           current_value: Callable[[str], object]) -> TracePlan | RunEager:
    """The plan for the next trace; `current_value(origin)` reads an origin in this call."""
    if history.compiles >= config.recompile_limit:
        return RunEager(f"reached the recompile limit ({config.recompile_limit})")
    changing = [o for o, values in history.specialized.items()
                if o not in history.changed and _seen_changing(config, values, current_value(o))]
    mode = "graph break" if config.specialize_on_read == "value" else "guarded expression"
    decisions = [f"{o}: specialized -> {mode}" for o in changing]
    changing += history.changed
    decisions += [f"{o}: specialized -> guarded expression" for o, values in history.compared.items()
                  if _seen_changing(config, values, current_value(o))]
    return TracePlan(dynamic, config.specialize_on_read, frozenset(changing), tuple(decisions))


def _seen_changing(config: Config, values: set[int], now: object) -> bool:
    """A dim pinned before now has another value, the `backoff_after`-th distinct one (or more)."""
    return now not in values and len(values) + 1 >= config.backoff_after
