"""What pdyn compiled for each code object after a run with graph breaks: the frame, its resume
functions and the callees its breaks call, each with its counters and the ops of its graphs."""

from __future__ import annotations

import re
from typing import Any

import torch

from pdyn.hook.eval_frame import CACHES


def _ops(gm: torch.fx.GraphModule | None) -> tuple[str, ...]:
    if gm is None:
        return ()
    return tuple(str(getattr(n.target, "__name__", n.target)) for n in gm.graph.nodes
                 if n.op in ("call_function", "call_method", "call_module"))


def _names() -> dict[Any, str]:
    """Each code object that ran: its qualname, a resume function's as `f.<resume 1>`, `f.<resume 2>`
    in the order of the lines they resume at (so tests do not spell line numbers)."""
    ran = [(code, cache) for (code, _), cache in CACHES.items() if cache.stats()["frames"]]
    lines = {code: int(m.group(1)) for code, _ in ran if (m := re.search(r"<pdyn resume at line (\d+)>$",
                                                                          code.co_qualname))}
    names = {}
    for code, _ in ran:
        if code not in lines:
            names[code] = code.co_qualname
            continue
        parent = code.co_qualname.rsplit(".<pdyn resume", 1)[0]
        siblings = sorted({n for c, n in lines.items() if c.co_qualname.startswith(parent + ".<pdyn resume")})
        names[code] = f"{parent}.<resume {siblings.index(lines[code]) + 1}>"
    return names


def by_code() -> dict[str, dict[str, Any]]:
    """name (see `_names`) -> {"compiles", "breaks", "eager", "graphs": the ops of each entry's
    graph} of every code object that ran since the last `pdyn.reset()`."""
    out: dict[str, dict[str, Any]] = {}
    names = _names()
    for (code, _), cache in CACHES.items():
        stats = cache.stats()
        if not stats["frames"]:
            continue
        out[names[code]] = {"compiles": stats["compiles"], "breaks": stats["graph_breaks"],
                                 "eager": stats["eager_fallbacks"],
                                 "graphs": [_ops(entry.graph_module) for entry in cache.entries]}
    return out


def compiles_by_code() -> dict[str, tuple[int, int, int]]:
    """qualname -> (compiles, graph breaks, eager fallbacks)."""
    return {name: (c["compiles"], c["breaks"], c["eager"]) for name, c in by_code().items()}
