"""Guards on nn.Module calls: pdyn inlines `forward`, not `Module.__call__`, which is right only
while no hook, the module's own or a global one, would run around it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from pdyn.guards.guards import Guard, Hoist
from pdyn.sources import AttrSource, Source


@dataclass(frozen=True, eq=False)
class NoHooksGuard(Guard):
    """A called nn.Module still has no forward or backward hooks (pdyn inlines `forward`, not `__call__`).

    The hook tables are read from the module's `__dict__`, bound once per module and shared with
    the reads of its members (ModuleMemberSource): where `Module.__init__` puts them, and what an
    attribute read finds, since no module class defines a property of those names. A dict item
    costs a third of an attribute read on a class with `__getattr__`."""

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        return " or ".join(f"{v}.{name}" for name in MODULE_HOOKS)

    def bound_checks(self, bind: Callable[[Source], str], hoist: Hoist) -> list[tuple[str, str]]:
        table = bind(AttrSource(self.source, "__dict__"))  # type: ignore[arg-type]
        return [(" or ".join(f"{table}[{name!r}]" for name in MODULE_HOOKS), self.sentence())]

    def sentence(self) -> str:
        return f"{self.source} has no forward or backward hooks"


@dataclass(frozen=True, eq=False)
class NoGlobalHooksGuard(Guard):
    """No global module hook (`register_module_forward_hook` and kin) is registered: a traced
    module call inlined `forward`, which is what `Module.__call__` runs only without them."""

    def key(self) -> tuple[Any, ...]:
        return (type(self),)

    def fail_expr(self, v: str, hoist: Hoist) -> str:
        hooks = hoist(torch.nn.modules.module, "module_hooks")  # read afresh: torch could rebind them
        return " or ".join(f"{hooks}.{name}" for name in GLOBAL_CALL_HOOKS)

    def sentence(self) -> str:
        return "no global nn.Module forward or backward hooks are registered"


# The hook tables of one module `Module.__call__` consults on every call, and the global ones.
MODULE_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
GLOBAL_CALL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                     "_global_backward_pre_hooks")
