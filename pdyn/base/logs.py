"""`PDYN_LOGS` topics as loggers under `pdyn`, and the per-code counters behind `pdyn.stats()`.

Each topic is a child logger (`pdyn.recompiles`, `pdyn.graph_breaks`, ...). `apply()` turns on the
topics named in the config; a handler is attached once, to the `pdyn` logger.
"""

from __future__ import annotations

import logging
import sys

from pdyn.base.config import LOG_TOPICS, Config, Settings, snapshot

ROOT = logging.getLogger("pdyn")
_handler: logging.Handler | None = None


def topic(name: str) -> logging.Logger:
    assert name in LOG_TOPICS, f"unknown log topic {name!r}; known: {LOG_TOPICS}"
    return logging.getLogger(f"pdyn.{name}")


def apply(settings: Config | Settings) -> None:
    """Set each topic's level from `config.logs`; attach a stderr handler if any is on."""
    global _handler
    config = snapshot(settings)
    unknown = set(config.logs) - set(LOG_TOPICS)
    if unknown:
        ROOT.warning("PDYN_LOGS names unknown topics %s; known: %s", sorted(unknown), ", ".join(LOG_TOPICS))
    for name in LOG_TOPICS:
        level = logging.DEBUG if name in config.logs else logging.WARNING
        logging.getLogger(f"pdyn.{name}").setLevel(level)
    if config.logs and _handler is None:
        _handler = logging.StreamHandler(sys.stderr)
        _handler.setFormatter(logging.Formatter("[pdyn.%(topic)s] %(message)s"))
        _handler.addFilter(_add_topic)
        ROOT.addHandler(_handler)
        ROOT.setLevel(logging.WARNING)  # module loggers stay quiet; only the topics asked for speak


def _add_topic(record: logging.LogRecord) -> bool:
    record.topic = record.name.removeprefix("pdyn.")
    return True


# frames: calls of the code; graphs: graphs compiled; ops_captured: torch ops in them;
# frames_without_graph: calls that ran no graph (eagerly, or an entry that broke before its first op);
# backward_graphs: backward graphs compiled for graphs that train (pdyn/backends/autograd);
# eager_fallbacks: decisions to run the whole frame eagerly (an untraceable frame, the recompile
# limit, an internal error). From the backend's report on each graph (pdyn/backends/report.py):
# kernels: distinct kernels generated; graphs_on_torch: graphs a compiling backend ran wholly with
# torch; nodes_on_torch: ops run as torch calls inside lowered graphs, of which library_calls are
# torch's library kernels by design (matrix products, attention, convolutions)
COUNTERS = ("frames", "compiles", "recompiles", "cache_hits", "graph_breaks", "eager_fallbacks", "graphs",
            "ops_captured", "frames_without_graph", "kernels", "graphs_on_torch", "nodes_on_torch",
            "library_calls", "backward_graphs")


def empty_counters() -> dict[str, int]:
    return dict.fromkeys(COUNTERS, 0)
