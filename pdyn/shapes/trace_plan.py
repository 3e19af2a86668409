"""TracePlan: what one trace assumes, decided by the recompile policy (the hook) and read by the
tracer and its ShapeEnv. It sits below both, so the tracer never imports the hook.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pdyn.sources import SizeSource
from pdyn.shapes.shape_env import ReadPolicy


@dataclass(frozen=True)
class TracePlan:
    """What one trace assumes: whether dims start static, and how size reads resolve."""

    dynamic: bool | None
    specialize_on_read: str
    changing: frozenset[SizeSource]   # sizes seen changing: their value reads break the graph
    decisions: tuple[str, ...] = ()   # for the recompile log, e.g. "L['x'].size(1): specialized -> graph break"

    @property
    def static_inputs(self) -> bool:
        return self.dynamic is False

    def read_policy(self, marked_dynamic: Callable[[SizeSource], bool]) -> ReadPolicy:
        def on_value_read(origin: SizeSource) -> str:
            if self.dynamic is True or origin in self.changing or marked_dynamic(origin):
                return "break"
            return "specialize"

        def on_bool_read(origin: SizeSource) -> str:
            if self.dynamic is True or origin in self.changing or marked_dynamic(origin):
                return "guard"
            return "specialize" if self.specialize_on_read == "any" else "guard"

        return ReadPolicy(on_value_read, on_bool_read)
