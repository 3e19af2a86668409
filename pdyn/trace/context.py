"""TraceContext: what one trace accumulates besides its fx graph: the plan it follows, its ShapeEnv,
its guards, the Python side effects to replay after the graph, and the builder's memo tables.

compile_frame makes one per trace and hands it to the OutputGraph and the translator; trackers
reach it as `tx.ctx`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from pdyn.guards.guards import DistinctGuard, GradModeGuard, Guard, GuardSet
from pdyn.sources import SizeSource, Source
from pdyn.shapes.shape_env import ShapeEnv
from pdyn.shapes.trace_plan import TracePlan

if TYPE_CHECKING:
    from pdyn.trace.variables.base import VariableTracker


class SideEffects:
    """Python-visible changes the trace made to objects that outlive it, in the order first made.

    `mutated` marks a list or dict read from the inputs whose contents changed; `store_attr` and
    `store_global` record the last value stored. The frame code replays them after the graph.
    """

    def __init__(self) -> None:
        self.containers: dict[int, VariableTracker] = {}
        self.attrs: dict[tuple[int, str], tuple[VariableTracker, VariableTracker]] = {}
        self.globals: dict[str, VariableTracker] = {}
        self.calls: list[tuple[VariableTracker, list[VariableTracker], dict[str, VariableTracker]]] = []
        self.cells: dict[int, tuple[VariableTracker, VariableTracker]] = {}   # id(cell tracker) -> it, stored value
        # every target in the order the program first changed it: the order the replay follows
        self.order: list[tuple[str, Any]] = []

    def _first(self, kind: str, key: Any, table: dict[Any, Any]) -> None:
        if key not in table:
            self.order.append((kind, key))

    def mutated(self, vt: VariableTracker) -> None:
        self._first("container", id(vt), self.containers)
        self.containers.setdefault(id(vt), vt)

    def store_attr(self, obj: VariableTracker, name: str, value: VariableTracker) -> None:
        self._first("attr", (id(obj), name), self.attrs)
        self.attrs[(id(obj), name)] = (obj, value)

    def store_global(self, name: str, value: VariableTracker) -> None:
        self._first("global", name, self.globals)
        self.globals[name] = value

    def store_cell(self, cell: VariableTracker, value: VariableTracker) -> None:
        """A store to a real cell (`nonlocal`, or the frame's own cell): its last value is replayed."""
        self._first("cell", id(cell), self.cells)
        self.cells[id(cell)] = (cell, value)

    def call(self, fn: VariableTracker, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> None:
        """A call whose only effect is outside Python's objects (a log line): made after the graph."""
        self.order.append(("call", len(self.calls)))
        self.calls.append((fn, args, kwargs))

    def load_attr(self, obj: VariableTracker, name: str) -> VariableTracker | None:
        entry = self.attrs.get((id(obj), name))
        return entry[1] if entry is not None else None

    def __bool__(self) -> bool:
        return bool(self.containers or self.attrs or self.globals or self.calls or self.cells)


@dataclass(frozen=True)
class TrackedObject:
    """The one tracker of a mutable object the trace read; `pinned`: every path to it is
    identity-guarded (a module)."""

    value: Any
    tracker: VariableTracker
    pinned: bool


class TraceContext:
    """The state of one trace that outlives any one instruction, and is not the graph itself."""

    def __init__(self, plan: TracePlan | None = None) -> None:
        self.plan = plan if plan is not None else TracePlan(None, "value", frozenset())
        self.dynamic_marks: set[SizeSource] = set()   # dims marked dynamic by the user
        self.shape_env = ShapeEnv(self.plan.read_policy(self.dynamic_marks.__contains__))
        self.guards = GuardSet()
        self.side_effects = SideEffects()
        self.wrapped: dict[Source, VariableTracker] = {}      # one tracker per source read
        self.objects_by_id: dict[int, TrackedObject] = {}     # one tracker per mutable object read
        self.real_cells: dict[int, tuple[Any, VariableTracker]] = {}   # id(cell) -> (cell, its one tracker)
        self.generators: list[Any] = []   # the GeneratorVariables the trace made (checked when it ends)
        self.compiling_sites: list[Any] = []   # where is_compiling() was answered True (restart.py)
        self.module_hooks: dict[int, list[Any]] = {}   # id(module) -> hooks registered in the trace (module_hooks_made.py)
        self.add_guard(GradModeGuard(None, enabled=torch.is_grad_enabled()))

    def add_guard(self, guard: Guard) -> None:
        self.guards.add(guard)

    def distinct_object_guards(self) -> list[DistinctGuard]:
        """The objects of one type the trace read are different objects where it changed one of
        them: traced as two, a change through one was not seen through the other (not needed
        where every one is pinned by identity). One check per type."""
        changed = {id(vt) for vt in self.side_effects.containers.values()}
        changed |= {id(owner) for owner, _ in self.side_effects.attrs.values()}
        # modules are guarded by class, not identity: `==`, `in` and `.index` on them decided by
        # which tracker is which hold while the modules stay distinct objects
        changed |= {id(t.tracker) for t in self.objects_by_id.values() if getattr(t.tracker, "guarded_by_type", False)}
        by_type: dict[type, list[TrackedObject]] = {}
        for t in self.objects_by_id.values():
            if t.tracker.source is not None:
                by_type.setdefault(type(t.value), []).append(t)
        guards = []
        for group in by_type.values():
            if len(group) > 1 and not all(t.pinned for t in group) and any(id(t.tracker) in changed for t in group):
                first, *rest = [t.tracker.source for t in group]
                guards.append(DistinctGuard(first, others=tuple(rest)))
        return guards
