"""The step record: each symbolic step a trace takes, with a stable id, and which steps to undo.

Off outside `pdyn.debug.bisect` (`ACTIVE` is None: `take` is one global read). While a record is
active, every step (a FloorDiv/CeilDiv rewrite, a replacement, a range refinement, a decision made
without a guard, a guard, a runtime assert dropped as known) is appended to it, and the ones it
undoes take the sound way round instead: the step's caller keeps the input unchanged, records a
guard, or pins the sizes. Correct results either way; an undone step may cost specializations.
"""

from __future__ import annotations

import math
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from pdyn.base.errors import SourceLoc

KINDS = ("rewrite", "replacement", "refinement", "decision", "assert", "guard")
UNDO = {   # what undoing a step of each kind does instead (for the report)
    "rewrite": "the expression is kept as written",
    "replacement": "the equality is kept as a guard, nothing is substituted",
    "refinement": "the range is left as it was",
    "decision": "the comparison is guarded instead of decided from the ranges",
    "assert": "the runtime assert is kept",
    "guard": "the sizes it reads are pinned to this trace's values",
}


@dataclass(frozen=True)
class Step:
    """One step: its kind, its ordinal among the steps of that kind in the replayed call, the user
    line it serves, and the expression before and after it."""

    kind: str
    ordinal: int
    loc: SourceLoc | None
    before: str
    after: str
    key: tuple[Any, ...] = field(repr=False)   # kind, line, before, occurrence: the same step in another replay

    @property
    def id(self) -> str:
        where = f"@{Path(self.loc.filename).name}:{self.loc.lineno}" if self.loc is not None else ""
        return f"{self.kind}#{self.ordinal}{where}"

    def __str__(self) -> str:
        return f"{self.id}: {self.before} -> {self.after}"


@dataclass
class StepRecord:
    """The steps of one replayed call. Undone: the first `limit` steps whose kind is in `kinds`
    (in the order this replay takes them), and every step whose key is in `keys`."""

    kinds: frozenset[str] = frozenset()
    limit: float = 0
    keys: frozenset[tuple[Any, ...]] = frozenset()
    steps: list[Step] = field(default_factory=list)
    undone: list[Step] = field(default_factory=list)
    loc: SourceLoc | None = None   # the user line of the op being recorded (set through LineTracker)
    _ordinals: Counter = field(default_factory=Counter)
    _seen: Counter = field(default_factory=Counter)
    _counted: int = 0

    @classmethod
    def undoing_all(cls, kinds: frozenset[str]) -> StepRecord:
        return cls(kinds, math.inf)

    def take(self, kind: str, before: Any, after: Any, loc: SourceLoc | None) -> bool:
        loc = loc or self.loc
        base = (kind, (loc.filename, loc.lineno) if loc is not None else None, str(before))
        self._seen[base] += 1
        self._ordinals[kind] += 1
        step = Step(kind, self._ordinals[kind], loc, str(before), str(after), (*base, self._seen[base]))
        self.steps.append(step)
        undo = step.key in self.keys
        if kind in self.kinds:
            undo = undo or self._counted < self.limit
            self._counted += 1
        if undo:
            self.undone.append(step)
        return not undo

    def in_kinds(self) -> list[Step]:
        """The steps this replay took of the kinds it undoes by count."""
        return [s for s in self.steps if s.kind in self.kinds]


ACTIVE: StepRecord | None = None


def take(kind: str, before: Any, after: Any, loc: SourceLoc | None = None) -> bool:
    """Note a step; False: the active record undoes it (the caller then takes the sound way round)."""
    record = ACTIVE
    return True if record is None else record.take(kind, before, after, loc)


@contextmanager
def recording(record: StepRecord) -> Iterator[StepRecord]:
    global ACTIVE
    previous, ACTIVE = ACTIVE, record
    try:
        yield record
    finally:
        ACTIVE = previous


class LineTracker:
    """A ShapeEnv's validator while a record is active and z3 is not: it checks nothing, and keeps
    the user line the OutputGraph sets on it, so that a step inside a shape rule names its line."""

    checked = skipped = 0

    def __init__(self, record: StepRecord):
        self._record = record

    @property
    def loc(self) -> SourceLoc | None:
        return self._record.loc

    @loc.setter
    def loc(self, value: SourceLoc | None) -> None:
        self._record.loc = value

    def on_symbol(self, *args: Any, **kwargs: Any) -> None:
        pass

    assume = check_equal = check_implied = check_guard_set = on_symbol
