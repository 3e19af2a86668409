"""The one table of call rules: a callable pdyn traces through (a builtin, a standard-library
function or class, a torch query, a method of dict or object) -> the rule that runs a call of it
over trackers.

A rule is declared beside its code with `@rule(fn, ...)`; `@rule_given(fn, ...)` is for a rule
shared by several callables that needs to know which one was called. A second rule for one key
raises `DuplicateRule` at import, naming both. `load_every_rule` imports every module of
`pdyn.trace.variables` (the builder calls it once, when it is loaded), so a rule is in the table
because its module exists, never because some list imports it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer
    from pdyn.trace.variables.base import VariableTracker

Rule = Callable[["Tracer", list["VariableTracker"], dict[str, "VariableTracker"]], "VariableTracker"]
GivenRule = Callable[["Tracer", Any, list["VariableTracker"], dict[str, "VariableTracker"]], "VariableTracker"]

RULES: dict[Any, Rule] = {}
_DECLARED_BY: dict[Any, str] = {}   # key -> the rule's qualified name, for the duplicate's message


class DuplicateRule(Exception):
    """Two rules declared for one callable: whichever module loads last would win silently."""


def _name(r: Any) -> str:
    return f"{getattr(r, '__module__', '?')}.{getattr(r, '__qualname__', repr(r))}"


def register(key: Any, r: Rule, declared_by: str | None = None) -> None:
    """Add the rule for `key`; a key that has one already raises."""
    if key in RULES:
        raise DuplicateRule(f"a second rule for {getattr(key, '__qualname__', key)!r}: "
                            f"{declared_by or _name(r)} (the first is {_DECLARED_BY[key]})")
    RULES[key] = r
    _DECLARED_BY[key] = declared_by or _name(r)


def rule(*keys: Any) -> Callable[[Rule], Rule]:
    """Decorator: `r` is the rule of each of `keys` (one named twice, as `dict.get` is also
    OrderedDict's, counts once)."""
    def declare(r: Rule) -> Rule:
        for key in dict.fromkeys(keys):
            register(key, r)
        return r

    return declare


def rule_given(*keys: Any) -> Callable[[GivenRule], GivenRule]:
    """Decorator: `r(tx, fn, args, kwargs)` is the rule of each of `keys`, told which was called."""
    def declare(r: GivenRule) -> GivenRule:
        for key in dict.fromkeys(keys):
            register(key, _bound(r, key), declared_by=_name(r))
        return r

    return declare


def _bound(r: GivenRule, key: Any) -> Rule:
    def run(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        return r(tx, key, args, kwargs)

    return run


def rule_of(fn: Any) -> Rule | None:
    """The rule of `fn`, or None (also for an unhashable value, which no rule can be keyed by)."""
    try:
        return RULES.get(fn)
    except TypeError:
        return None


def load_every_rule() -> None:
    """Import every module of pdyn.trace.variables, so every rule declared in one is registered."""
    package = Path(__file__).parent
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if parts[-1] != "__init__":
            importlib.import_module(".".join((__package__, *parts)))
