"""`PDYN_TRACE_DIR`: a structured record of every compile, one JSON object per line in
`<dir>/pdyn_trace_<pid>.jsonl`, for `python -m pdyn.report <dir>` to render.

A record holds what the logs print piecemeal: the function, when and how long it compiled, why it
recompiled (each entry's failing guard, this call's value, the user line that made the guard), the
graph with its user lines, the break or eager reason, each specialization with its line, the guard
source, the frame code, and what the backend made of the graph (kernels, calls left to torch).
Writing a record never changes what is compiled; a record that cannot be written is logged once.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import types
from typing import Any

from pdyn.base.config import Config
from pdyn.base.errors import Unsupported
from pdyn.hook.compile_frame import CacheEntry, title_of

log = logging.getLogger(__name__)
_lock = threading.Lock()
_failed: set[str] = set()


def trace_file(directory: str) -> str:
    return os.path.join(directory, f"pdyn_trace_{os.getpid()}.jsonl")


def record_compile(config: Config, code: types.CodeType, entry: CacheEntry, backend: Any, compile_number: int,
                   reasons: list[dict[str, Any]], decisions: tuple[str, ...]) -> None:
    """Append the record of one compiled entry (nothing without `config.trace_dir`)."""
    if config.trace_dir:
        _write(config.trace_dir, {
            "event": "compile", "time": time.time() - entry.compile_seconds, "seconds": entry.compile_seconds,
            "function": title_of(code), "file": code.co_filename, "line": code.co_firstlineno,
            "compile": compile_number, "recompile_limit": config.recompile_limit, "entry": entry.number,
            "recompile_reasons": reasons, "decisions": list(decisions),
            "break": _why(entry.break_reason), "eager": _why(entry.eager_reason),
            "specializations": list(entry.shape_decisions),
            "pinned": [{"size": str(source), "value": value, "by_value_read": by_read}
                       for source, (value, by_read) in entry.pinned.items()],
            **_graph(entry), "guards": entry.guard.source, "frame_code": entry.frame_source,
            "backend": _name(backend),
            "compiled": _compiled(entry.extra.get("compiled")),
        })


def record_eager(config: Config, code: types.CodeType, backend: Any, reason: str | None) -> None:
    """Append the record of a decision to run a function eagerly from now on (the limit, an error)."""
    if config.trace_dir:
        _write(config.trace_dir, {"event": "run_eagerly", "time": time.time(), "function": title_of(code),
                                  "file": code.co_filename, "line": code.co_firstlineno, "reason": reason,
                                  "backend": _name(backend)})


def _name(backend: Any) -> str:
    return str(getattr(backend, "__name__", type(backend).__name__))


def _why(e: Unsupported | None) -> dict[str, Any] | None:
    if e is None:
        return None
    loc = e.loc
    return {"key": e.key, "reason": e.message, "file": loc.filename if loc else None,
            "line": loc.lineno if loc else None}


def _graph(entry: CacheEntry) -> dict[str, Any]:
    gm = entry.graph_module
    if gm is None:
        return {"graph": None, "ops": []}
    ops = [node.target if isinstance(node.target, str) else getattr(node.target, "__name__", str(node.target))
           for node in gm.graph.nodes if node.op not in ("placeholder", "output", "get_attr")]
    return {"graph": gm.print_readable(print_output=False), "ops": ops}


def _compiled(compiled: Any) -> dict[str, Any] | None:
    """What the Triton backend made of the graph: its wrapper, kernels and calls left to torch (the
    wrapper's `# extern: matmul` and `# fallback: ...` calls), or None for other backends."""
    triton = getattr(compiled, "pdyn_triton", False)
    if triton is False:
        return None
    if triton is None:
        return {"runs_with_torch": True, "kernels": [], "extern": []}
    return {"runs_with_torch": False, "wrapper": triton.wrapper_source,
            "kernels": list(triton.kernel_sources), "kernel_count": triton.kernel_count,
            "extern": re.findall(r"  # ((?:extern|fallback): .*)$", triton.wrapper_source, flags=re.M)}


def _write(directory: str, record: dict[str, Any]) -> None:
    line = json.dumps(record, default=str) + "\n"
    try:
        with _lock:
            os.makedirs(directory, exist_ok=True)
            with open(trace_file(directory), "a", encoding="utf-8") as f:
                f.write(line)
    except OSError as e:
        if directory not in _failed:
            _failed.add(directory)
            log.warning("pdyn: cannot write the compile record to %s: %s", directory, e)
