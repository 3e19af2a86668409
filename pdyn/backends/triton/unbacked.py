"""Graphs with data-dependent sizes (unbacked symbols u0, ...: nonzero, x[mask], `.tolist()` as
sizes) on the Triton backend.

Their sizes are known only once the producing op has run; the wrapper does not yet bind such a
symbol from its producer's result, so a graph whose sizes use one runs with torch, with the stated
reason "data-dependent sizes" (never a kernel sized from a guessed hint).
"""

from __future__ import annotations

from typing import Any

import sympy
import torch.fx

from pdyn.shapes.graph_meta import EXPR, SIZES, SYMBOLS

REASON = "data-dependent sizes"


def data_dependent_reason(gm: torch.fx.GraphModule) -> str | None:
    """`REASON` naming the symbols where a node's sizes (or a size value) use a symbol that no input
    binds; None where every size comes from the inputs."""
    symbols = gm.meta.get(SYMBOLS)
    bound = set(symbols.bindings) if symbols is not None else set()
    free: set[sympy.Symbol] = set()
    for node in gm.graph.nodes:
        for value in (node.meta.get(SIZES), node.meta.get(EXPR)):
            free |= _symbols(value) - bound
    if not free:
        return None
    return f"{REASON} ({', '.join(sorted(s.name for s in free))})"


def _symbols(value: Any) -> set[sympy.Symbol]:
    if isinstance(value, (tuple, list)):
        return set().union(*(_symbols(v) for v in value)) if value else set()
    if isinstance(value, sympy.Basic):
        return set(value.free_symbols)
    return set()
