"""The kinds of error pdyn raises, and SourceLoc, the user's file:line they point at.

`Unsupported` is a graph break (today: the frame runs eagerly); `UserError` is a wrong use of
pdyn's API; `InternalError` means an invariant of pdyn broke. Reaching the recompile limit is no
error: the code runs eagerly from then on, with one warning.
"""

from __future__ import annotations

import linecache
import types
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SourceLoc:
    """A position in the user's source: file, line, and the columns for a caret."""

    filename: str
    lineno: int
    function: str = ""
    col: int | None = None
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"

    def source_line(self) -> str:
        return linecache.getline(self.filename, self.lineno).rstrip()

    def render(self) -> str:
        """`at file:line in fn`, the line itself and a caret under the columns."""
        where = f"  at {self.filename}:{self.lineno}" + (f" in {self.function}" if self.function else "")
        line = self.source_line()
        if not line:
            return where
        text = line.lstrip()
        indent = len(line) - len(text)
        out = [where, "      " + text]
        if self.col is not None and self.end_col is not None and self.end_col > self.col >= indent:
            out.append("      " + " " * (self.col - indent) + "^" * (self.end_col - self.col))
        return "\n".join(out)


@dataclass(frozen=True)
class BreakPoint:
    """Where the root frame can break: its `step`-th traced instruction, `inst` (an Instruction)."""

    step: int
    inst: Any


class Unsupported(Exception):
    """pdyn cannot trace this construct: a graph break, or with `fullgraph=True` an error.

    `key` is stable (counted in `explain()`, listed in docs/graph-breaks.md), `loc` is the
    user's line, `hint` says what the user can do. The translator fills in `break_at` (the root
    frame's instruction that was running) and `in_call` (the code of the inlined call it was raised in:
    the root then breaks at the call that entered it).
    """

    def __init__(self, key: str, message: str, *, hint: str = "", loc: SourceLoc | None = None):
        self.key = key
        self.message = message
        self.hint = hint
        self.loc = loc
        self.break_at: BreakPoint | None = None
        self.in_call: types.CodeType | None = None
        super().__init__(message)

    def __str__(self) -> str:
        parts = [self.message]
        if self.loc is not None:
            parts.append(self.loc.render())
        if self.hint:
            parts.append(f"  hint: {self.hint}")
        return "\n".join(parts)


class SkipFrame(Exception):
    """A graph break inside a loop with nothing captured before it: the frame runs without a graph,
    its calls routed through pdyn (`pdyn.trace.breaks.loops`). `at` is the breaking call's position
    in `bytecode.Bytecode.from_code(code)`, `loop` the first and last position of the loop around
    it; `reason` the break."""

    def __init__(self, reason: Unsupported, at: int, loop: tuple[int, int]):
        self.reason = reason
        self.at = at
        self.loop = loop
        super().__init__(str(reason))


class UserError(Exception):
    """A wrong use of pdyn's API (a bad argument to optimize, mark_dynamic on a non-tensor, ...)."""


class RecompileError(RuntimeError):
    """A call needed a recompile under `pdyn.set_stance("fail_on_recompile")`; says which guards failed."""


class InternalError(Exception):
    """An invariant of pdyn broke. Please report it with PDYN_LOGS=bytecode,graph output."""


class UserException(Exception):
    """Internal: user code raised while being traced. Uncaught, the frame reruns eagerly, raising it
    for real. `catchable` marks an exception whose raising the guards already decide (a `raise`
    statement reached by guarded control flow): only those may enter the traced code's handlers.
    `tracker` is the raised value's tracker where it is an input (its handler then handles that
    tracker, source included)."""

    def __init__(self, exc: BaseException, loc: SourceLoc | None = None, *, catchable: bool = False,
                 tracker: Any = None):
        self.exc = exc
        self.loc = loc
        self.catchable = catchable
        self.tracker = tracker
        super().__init__(f"{type(exc).__name__}: {exc}")
