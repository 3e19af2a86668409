"""The function a graph calls to check a runtime assert, and the user-facing `check` statements.

A fact about data-dependent sizes that the trace assumed (`u0 == s1` for a broadcast, the split
sizes summing to the dim, the user's own `pdyn.check(n <= x.shape[0])`) is recorded in the graph
as a `runtime_assert` node, at the point of the program where it was assumed: the compiled code
checks it there and raises what eager raises (its type, a message naming the user's line).
"""

from __future__ import annotations

import builtins
import functools
import math
import sys
from typing import Any, Callable

ERRORS = {e.__name__: e for e in (RuntimeError, ValueError, IndexError, TypeError, AssertionError)}


@functools.lru_cache(maxsize=None)
def _compiled(code: str, arity: int) -> Callable[..., Any]:
    names = ", ".join(f"v{i}" for i in range(arity))
    return eval(f"lambda {names}: {code}", {"math": math})  # noqa: S307  # pdyn's own printed sympy


def runtime_assert(code: str, error: str, message: str, *values: Any) -> None:
    """Raise `error(message)` unless `code` (a Python expression over v0, v1, ...) holds for `values`."""
    if not _compiled(code, len(values))(*values):
        raise ERRORS.get(error, RuntimeError)(message)


def check(cond: Any, message: str | None = None) -> None:
    """Eagerly: raise RuntimeError unless `cond`. Compiled: the trace assumes `cond` (a comparison
    of sizes, data-dependent ones included) and the compiled code checks it at this point."""
    if not cond:
        caller = sys._getframe(1)
        raise RuntimeError(f"{message or 'pdyn.check failed'} (at {caller.f_code.co_filename}:{caller.f_lineno})")


def check_is_size(value: Any) -> None:
    """Mark `value` (an int computed from tensor data) as a size: >= 0, and never 0/1-specialized."""
    if not isinstance(value, builtins.int) or value < 0:
        caller = sys._getframe(1)
        raise RuntimeError(f"pdyn.check_is_size: the value is not a size (at {caller.f_code.co_filename}:"
                           f"{caller.f_lineno})")
