"""Compile controls as torch.compile's users know them: `set_stance` (what a call that needs a
recompile does) and `error_on_graph_break` (a graph break raises), both usable as a plain call or
as a `with` block; the per-function `recompile_limit` is an argument of `pdyn.optimize`."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from pdyn.base.config import config
from pdyn.base.errors import UserError

STANCES = ("default", "fail_on_recompile", "eager_on_recompile")


class _Restore(AbstractContextManager):
    """Returned by the setters: as a `with` block, puts the previous values back on exit."""

    def __init__(self, previous: dict[str, Any]) -> None:
        self.previous = previous

    def __exit__(self, *exc: object) -> None:
        config.update(**self.previous)


def set_stance(stance: str = "default") -> _Restore:
    """`"fail_on_recompile"`: a call that no compiled entry matches raises `RecompileError` (naming
    the guards that failed) instead of compiling again; `"eager_on_recompile"`: it runs eagerly,
    while calls that match an entry still run it; `"default"`: compile. A function's first compile
    is no recompile. `pdyn.set_stance(s)` sets it; `with pdyn.set_stance(s):` sets it for the block."""
    if stance not in STANCES:
        raise UserError(f"pdyn.set_stance takes one of {', '.join(STANCES)}, not {stance!r}")
    return _set(stance=stance)


def error_on_graph_break(on: bool = True) -> _Restore:
    """A graph break raises `pdyn.Unsupported` (as `fullgraph=True`) in compiles started while it is
    on; `with pdyn.error_on_graph_break():` scopes it (as `pdyn.config.patch(error_on_graph_break=True)`)."""
    return _set(error_on_graph_break=bool(on))


def _set(**changes: Any) -> _Restore:
    previous = {name: getattr(config, name) for name in changes}
    config.update(**changes)
    return _Restore(previous)
