"""Guards on the process environment: the variables a trace read from `os.environ`, or all of
them where it listed the environment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pdyn.guards.guards import Guard, Hoist


@dataclass(frozen=True, eq=False)
class EnvVarGuard(Guard):
    """An environment variable the trace read (`os.environ.get(name)`, `name in os.environ`) still
    has the value it had, None for unset: setting, changing or unsetting it recompiles."""

    environ: Any = None
    name: Any = ""
    value: Any = None

    def key(self) -> tuple[Any, ...]:
        return (type(self), id(self.environ), self.name)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"{hoist(self.environ, 'environ')}.get({self.name!r}) != {self.value!r}"

    def sentence(self) -> str:
        return f"os.environ.get({self.name!r}) == {self.value!r}"


@dataclass(frozen=True, eq=False)
class EnvSnapshotGuard(Guard):
    """The whole environment is what the trace saw (it listed it: `os.environ.keys()`, `len`,
    iteration, `dict(os.environ)`): any change recompiles."""

    environ: Any = None
    items: tuple[tuple[Any, Any], ...] = ()

    def key(self) -> tuple[Any, ...]:
        return (type(self), id(self.environ))

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return f"tuple({hoist(self.environ, 'environ')}.items()) != {hoist(self.items, 'environment')}"

    def sentence(self) -> str:
        return f"the environment's {len(self.items)} variables are as traced"
