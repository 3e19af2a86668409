"""Graphs with data-dependent sizes (unbacked symbols u0, ...: nonzero, x[mask], `.item()` and
`.tolist()` as sizes) on the Triton backend.

A data-dependent size is known once the op that makes it has run: that op runs with torch (no
kernel computes an output of unknown size), and the wrapper binds the symbol from its result right
after the call (`u0 = t3.shape[0]`, `u1 = t5[2]`), before any kernel that takes it as a size
argument. Kernels size their launches from the arguments they are given, so block sizes and
loop bounds come from the actual value, never a hint. A size no torch call produces (a producer
lowered to a kernel) fails the compile with the stated reason "data-dependent sizes": the graph
runs with torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sympy

from pdyn.backends.triton.ir import TorchCall
from pdyn.shapes.graph_meta import EXPR, SIZES, UNBACKED

if TYPE_CHECKING:
    from pdyn.backends.triton.graph_lowering import GraphLowering

REASON = "data-dependent sizes"


class DataDependentSizes(Exception):
    """A data-dependent size the wrapper cannot bind: the graph runs with torch."""


def bind_unbacked(lx: GraphLowering) -> list[sympy.Symbol]:
    """Bind each data-dependent size after the torch call that produces it; returns the symbols
    bound. Raises DataDependentSizes naming a size used that no torch call produces."""
    calls: dict[Any, TorchCall] = {}
    for step in lx.scheduled:
        if isinstance(step, TorchCall):
            calls.setdefault(step.node, step)
    bound: list[sympy.Symbol] = []
    for node in lx.gm.graph.nodes:
        for symbol, item, dim in node.meta.get(UNBACKED, ()):
            call = calls.get(node)
            if call is None:
                continue
            expr = call.name + (f"[{item}]" if item is not None else "")
            call.binds.append((symbol, f"{expr}.shape[{dim}]" if dim is not None else f"int({expr})"))
            bound.append(symbol)
    inputs = {symbol for symbol, _ in lx.sym.bindings}
    missing = sorted(used_symbols(lx.gm) - inputs - set(bound), key=lambda s: s.name)
    if missing:
        raise DataDependentSizes(f"{REASON} ({', '.join(s.name for s in missing)}): no torch call produces them")
    return bound


def used_symbols(gm: Any) -> set[sympy.Symbol]:
    """Every symbol in the graph's stamped sizes and size values."""
    found: set[sympy.Symbol] = set()
    for node in gm.graph.nodes:
        for value in (node.meta.get(SIZES), node.meta.get(EXPR)):
            found |= _symbols(value)
    return found


def _symbols(value: Any) -> set[sympy.Symbol]:
    if isinstance(value, (tuple, list)):
        return set().union(*(_symbols(v) for v in value)) if value else set()
    if isinstance(value, sympy.Basic):
        return set(value.free_symbols)
    return set()
