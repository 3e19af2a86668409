"""Every knob pdyn has, its default, and the environment variable that sets it.

This is the only module that reads `PDYN_*` variables. `Config` is a frozen snapshot that
internals read; `pdyn.config` is the user's `Settings`: assigning one of its attributes replaces
its snapshot (`pdyn.config.recompile_limit = 3`), and `pdyn.config.patch(...)` does so for a block.
Tests pass their own `Config` where they need another value.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

LOG_TOPICS = ("graph", "guards", "graph_breaks", "recompiles", "output_code", "dynamic", "bytecode", "cudagraphs")


def _env_topics() -> frozenset[str]:
    raw = os.environ.get("PDYN_LOGS", "")
    return frozenset(t.strip() for t in raw.split(",") if t.strip())


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw else default


def _env_cache_dir() -> str:
    default = os.path.join(tempfile.gettempdir(), f"pdyn_{os.getuid()}")
    return os.environ.get("PDYN_CACHE_DIR") or default


def _env_fast_launch() -> bool:
    return os.environ.get("PDYN_TRITON_FAST_LAUNCH", "1") != "0"


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "0") not in ("", "0")


def _env_buckets() -> tuple[int, ...] | None:
    raw = os.environ.get("PDYN_CUDAGRAPH_BUCKETS")
    return tuple(int(b) for b in raw.split(",") if b.strip()) if raw else None


def _env_warn_no_graph() -> bool:
    return os.environ.get("PDYN_WARN_NO_GRAPH", "1") != "0"


@dataclass(frozen=True)
class Config:
    """pdyn's settings, fixed for one trace or one compiled graph. Build another with
    `dataclasses.replace` or `Config(field=...)`; fields without a value come from the environment."""

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
    # PDYN_LOGS topics that are on
    logs: frozenset[str] = field(default_factory=_env_topics)
    # PDYN_CACHE_DIR: where generated kernel modules are written (Triton finds its binaries by them)
    cache_dir: str = field(default_factory=_env_cache_dir)
    # PDYN_TRITON_FAST_LAUNCH=0: every launch goes through Triton's own launch path
    triton_fast_launch: bool = field(default_factory=_env_fast_launch)
    # PDYN_WARN_NO_GRAPH=0: no warning when an optimized function keeps running without any graph
    warn_no_graph: bool = field(default_factory=_env_warn_no_graph)
    # PDYN_TRANSLATION_VALIDATION=1: z3 checks every symbolic step of each trace (pip install pdyn[validate])
    translation_validation: bool = field(default_factory=lambda: _env_flag("PDYN_TRANSLATION_VALIDATION"))
    # PDYN_CHECK_HINTS=1 (the test suite): a shape rule whose sizes differ from the fake run's at this
    # call's sizes is an internal error, not a silent specialization
    check_hints: bool = field(default_factory=lambda: _env_flag("PDYN_CHECK_HINTS"))
    # PDYN_CUDAGRAPHS=1: replay compiled graphs from CUDA graphs (as mode="reduce-overhead" does)
    cudagraphs: bool = field(default_factory=lambda: _env_flag("PDYN_CUDAGRAPHS"))
    # PDYN_CUDAGRAPH_BUCKETS=1,8,64: the sizes a paddable dim is padded up to (None: powers of two)
    cudagraph_buckets: tuple[int, ...] | None = field(default_factory=_env_buckets)
    # a graph break raises (as fullgraph=True) in compiles that start while it is on:
    # `with pdyn.config.patch(error_on_graph_break=True):`
    error_on_graph_break: bool = False
    # pdyn.set_stance: "default"; "fail_on_recompile" (a recompile raises RecompileError);
    # "eager_on_recompile" (a call no entry matches runs eagerly, no compile)
    stance: str = "default"
    # most CUDA graphs captured for one compiled graph; further shapes run uncaptured
    cudagraph_limit: int = field(default_factory=lambda: _env_int("PDYN_CUDAGRAPH_LIMIT", 64))
    # PDYN_TRACE_DIR: append a JSON record of every compile there (`python -m pdyn.report DIR` renders it)
    trace_dir: str | None = field(default_factory=lambda: os.environ.get("PDYN_TRACE_DIR") or None)


FIELDS = frozenset(f.name for f in dataclasses.fields(Config))


class Settings:
    """The live settings behind `pdyn.config`: attribute reads see the current snapshot, attribute
    writes replace it. Compiles take `snapshot()` when they start, so a change affects the next
    compile, never one in progress."""

    def __init__(self, config: Config | None = None) -> None:
        object.__setattr__(self, "_current", config or Config())

    def snapshot(self) -> Config:
        return self._current  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        if name == "_current":  # NOTE: not set yet (copy, pickle): no recursion through the snapshot
            raise AttributeError(name)
        return getattr(self._current, name)

    def __setattr__(self, name: str, value: Any) -> None:
        self.update(**{name: value})

    def update(self, **changes: Any) -> None:
        unknown = set(changes) - FIELDS
        if unknown:
            raise AttributeError(f"pdyn.config has no setting {', '.join(sorted(unknown))}; "
                                 f"the settings are {', '.join(sorted(FIELDS))}")
        object.__setattr__(self, "_current", dataclasses.replace(self._current, **changes))

    @contextmanager
    def patch(self, **changes: Any) -> Iterator[Config]:
        """`with pdyn.config.patch(recompile_limit=3):` these values inside the block only."""
        previous = self._current
        self.update(**changes)
        try:
            yield self._current
        finally:
            object.__setattr__(self, "_current", previous)

    def __repr__(self) -> str:
        return f"pdyn.config: {self._current!r}"


def snapshot(config: Config | Settings) -> Config:
    """The frozen values of `config`, whether a Config already or the live settings."""
    return config.snapshot() if isinstance(config, Settings) else config


config = Settings()
