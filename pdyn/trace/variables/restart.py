"""Restart and break earlier: the speculation log of graph breaks pdyn chooses itself. A break that
finds a value made only in the trace and not rebuildable (a `@contextmanager` generator suspended at
its yield, a generator the trace started) restarts the trace with a break forced where that value
was made (the with's BEFORE_WITH, the call that made it), so it is made for real by a step function.
Forced breaks are kept per code object (later compiles break there at once), bounded per compile.

The other choice it keeps is `torch.compiler.is_compiling()`'s answer per call site. pdyn answers
True, as torch.compile does: libraries ask it to take the path a compiler captures (transformers
skips its data-dependent mask checks). Some of those paths are made for torch.compile's own
machinery (transformers' Mamba then calls `associative_scan`, which pdyn does not trace), where the
eager path captures more. So a trace that answered True and then broke traces once more with the
last such site answered False (eager's answer, so never wrong), and keeps False only where that
trace got further through the frame's own instructions, or did not break. A site is the chain of
call instructions from the frame's code to the query: one library helper
(`is_torchdynamo_compiling`) is answered per caller. The choice is kept per site.
"""

from __future__ import annotations

import logging
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

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


# -- torch.compiler.is_compiling() per call site --------------------------------------------------

# the chain of (code object, instruction index) from a frame's code down to the query
CompilingSite = tuple[tuple[types.CodeType, int], ...]

ANSWERED_FALSE: set[CompilingSite] = set()   # sites where False got further
TRIED: set[CompilingSite] = set()            # sites already traced both ways (decided once)


def site_of(tx: Tracer) -> CompilingSite:
    chain = []
    frame: Tracer | None = tx
    while frame is not None:
        chain.append((frame.code, frame.ip - 1))   # ip is past the instruction being run
        frame = frame.parent
    return tuple(reversed(chain))


def compiling_answer(tx: Tracer) -> bool:
    """The answer at this call site; a True one is noted in the trace, for `try_false`."""
    site = site_of(tx)
    if site in ANSWERED_FALSE:
        return False
    tx.ctx.compiling_sites.append(site)
    return True


def try_false(sites: list[CompilingSite]) -> CompilingSite | None:
    """After a break: the last site the trace answered True and never traced with False, now
    answered False (the caller traces again), or None."""
    for site in reversed(sites):
        if site not in TRIED:
            TRIED.add(site)
            ANSWERED_FALSE.add(site)
            log.info("tracing %s again with torch.compiler.is_compiling() False in %s", site[0][0].co_name,
                     " -> ".join(code.co_name for code, _ in site[1:]) or "it")
            return site
    return None


def keep_true(site: CompilingSite) -> None:
    """False got no further than True at `site`: answer True there again."""
    ANSWERED_FALSE.discard(site)
