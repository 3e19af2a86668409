"""`torch.compiler.is_compiling()` per call site. pdyn answers True, as torch.compile does: libraries
ask it to take the path a compiler captures (transformers skips its data-dependent mask checks).
Some of those paths are made for torch.compile's own machinery (transformers' Mamba then calls
`associative_scan`, a higher-order op pdyn does not trace), where the eager path captures more.

So a trace that answered True somewhere and then broke traces once again with the last such site
answered False (eager's answer, so never wrong), and keeps False only where that trace got
further through the frame's own instructions before its break, or did not break. A site is the chain of call
instructions from the frame's code to the query, so one library helper (`is_torchdynamo_compiling`)
is answered per caller. The choice is kept per site, as restart.py keeps forced breaks.
"""

from __future__ import annotations

import logging
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

log = logging.getLogger("pdyn.graph_breaks")

# the chain of (code object, instruction index) from a frame's code down to the query
Site = tuple[tuple[types.CodeType, int], ...]

ANSWERED_FALSE: set[Site] = set()   # sites where False captured more
TRIED: set[Site] = set()            # sites already traced both ways (decided once)


def site_of(tx: Tracer) -> Site:
    chain = []
    frame: Tracer | None = tx
    while frame is not None:
        chain.append((frame.code, frame.ip - 1))   # ip is past the instruction being run
        frame = frame.parent
    return tuple(reversed(chain))


def answer(tx: Tracer) -> bool:
    """The answer at this call site; a True one is noted in the trace, for `try_false`."""
    site = site_of(tx)
    if site in ANSWERED_FALSE:
        return False
    tx.ctx.compiling_sites.append(site)
    return True


def try_false(sites: list[Site]) -> Site | None:
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


def keep_true(site: Site) -> None:
    """False captured no more than True at `site`: answer True there again."""
    ANSWERED_FALSE.discard(site)
