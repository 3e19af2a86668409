"""Restart and break earlier: the speculation log of graph breaks pdyn chooses itself. A break that
finds a value made only in the trace and not rebuildable (a `@contextmanager` generator suspended at
its yield, a generator the trace started) restarts the trace with a break forced where that value
was made (the with's BEFORE_WITH, the call that made it), so it is made for real by a step function.
Forced breaks are kept per code object (later compiles break there at once), bounded per compile.
"""

from __future__ import annotations

import logging
import types
from dataclasses import dataclass

log = logging.getLogger("pdyn.graph_breaks")

MAX_RESTARTS = 8   # forced breaks one compile may add before the frame falls back to eager

# code object -> {decoded instruction index: why the trace breaks there}
FORCED_BREAKS: dict[types.CodeType, dict[int, str]] = {}


@dataclass(frozen=True)
class BreakSite:
    """An instruction of a root frame's code: where a value the trace made was made."""

    code: types.CodeType
    index: int


class RestartTrace(Exception):
    """Trace `site.code` again with a graph break forced at `site.index` (not an Unsupported: it
    passes through the handlers that turn a failed break into an eager fallback)."""

    def __init__(self, site: BreakSite, reason: str):
        self.site = site
        self.reason = reason
        super().__init__(f"restart with a break at instruction {site.index} of {site.code.co_name}: {reason}")


def forced_breaks(code: types.CodeType) -> dict[int, str]:
    return FORCED_BREAKS.get(code, {})


def force_break(restart: RestartTrace) -> bool:
    """Record the forced break `restart` asks for; False where it is already forced (no progress)."""
    sites = FORCED_BREAKS.setdefault(restart.site.code, {})
    if restart.site.index in sites:
        return False
    sites[restart.site.index] = restart.reason
    log.info("tracing %s again with a graph break at instruction %d: %s", restart.site.code.co_name,
             restart.site.index, restart.reason)
    return True
