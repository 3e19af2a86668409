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

from pdyn.base.config import Config
from pdyn.sources import SizeSource
from pdyn.shapes.trace_plan import TracePlan


@dataclass
class CodeHistory:
    """What earlier compiles of one code object specialized, and to which values."""

    compiles: int = 0
    specialized: dict[SizeSource, set[int]] = field(default_factory=dict)   # size -> values a value read pinned
    compared: dict[SizeSource, set[int]] = field(default_factory=dict)      # size -> values an equality pinned
    changed: set[SizeSource] = field(default_factory=set)   # sizes seen changing: dynamic from then on

    def record(self, pinned: dict[SizeSource, tuple[int, bool]],
               changing: frozenset[SizeSource] = frozenset()) -> None:
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


@dataclass(frozen=True)
class InheritedSizes:
    """What a resume function knows of its parent frame: which parent size each of its own sizes
    is (`parent_of`, e.g. `L['pdyn_stack0'].size(0)` -> `L['x'].size(0)`), and the parent's history."""

    parent_of: dict[SizeSource, SizeSource]
    parent: CodeHistory
    grandparent: InheritedSizes | None = None   # what the parent knows of its own parent, and so on

    def changing(self) -> list[SizeSource]:
        """This frame's sizes whose parent size the parent, or a frame it inherits from, has seen
        changing (a resume function of a resume function, a callee's resume function)."""
        changed = set(self.parent.changed)
        if self.grandparent is not None:
            changed |= set(self.grandparent.changing())
        return [own for own, parent in self.parent_of.items() if parent in changed]


def decide(config: Config, history: CodeHistory, dynamic: bool | None,
           current_value: Callable[[SizeSource], object],
           inherited: InheritedSizes | None = None) -> TracePlan | RunEager:
    """The plan for the next trace; `current_value(size)` reads a size in this call (None where it
    cannot be read). A resume function's sizes that its parent saw changing start as changing."""
    if history.compiles >= config.recompile_limit:
        return RunEager(f"reached the recompile limit ({config.recompile_limit})")
    changing = [o for o, values in history.specialized.items()
                if o not in history.changed and _seen_changing(config, values, current_value(o))]
    mode = "graph break" if config.specialize_on_read == "value" else "guarded expression"
    decisions = [f"{o}: specialized -> {mode}" for o in changing]
    if inherited is not None:
        from_parent = [o for o in inherited.changing() if o not in changing and o not in history.changed]
        decisions += [f"{o}: changing in the parent frame ({inherited.parent_of[o]})" for o in from_parent]
        changing += from_parent
    changing += history.changed
    decisions += [f"{o}: specialized -> guarded expression" for o, values in history.compared.items()
                  if _seen_changing(config, values, current_value(o))]
    return TracePlan(dynamic, config.specialize_on_read, frozenset(changing), tuple(decisions))


def _seen_changing(config: Config, values: set[int], now: object) -> bool:
    """A dim pinned before now has another value, the `backoff_after`-th distinct one (or more)."""
    return now not in values and len(values) + 1 >= config.backoff_after
