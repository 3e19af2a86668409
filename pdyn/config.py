"""Every knob pdyn has, its default, and the environment variable that sets it.

This is the only module that reads `PDYN_*` variables. `pdyn.config` is the live instance;
tests pass their own `Config` where they need another value.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

LOG_TOPICS = ("graph", "guards", "graph_breaks", "recompiles", "output_code", "dynamic", "bytecode")


def _env_topics() -> frozenset[str]:
    raw = os.environ.get("PDYN_LOGS", "")
    return frozenset(t.strip() for t in raw.split(",") if t.strip())


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw else default


@dataclass
class Config:
    """pdyn's settings. Change them on `pdyn.config` before the first call they should affect."""

    # compiles of one code object, then that code runs eagerly (torch.compile's default too)
    recompile_limit: int = field(default_factory=lambda: _env_int("PDYN_RECOMPILE_LIMIT", 8))
    # the compile at which a read dim that keeps changing stops being specialized
    backoff_after: int = 2
    # "value": only reads that need a size's value specialize it; "any": any read does
    specialize_on_read: str = "value"
    # deepest chain of inlined user calls before the trace gives up
    inline_depth_limit: int = 32
    # most instructions one trace may step through (guards against runaway loops)
    max_trace_steps: int = 200_000
    # check each handler's stack effect against dis.stack_effect (slow; for development)
    debug_stack: bool = False
    # PDYN_LOGS topics that are on
    logs: frozenset[str] = field(default_factory=_env_topics)


config = Config()
