"""Padding a graph's calls up to a bucket: which inputs and outputs carry a paddable symbol's dims
(dims.py decides which symbols qualify), the bucket a size falls in, and the padding and slicing.

The rule: a symbol of value n is run as the smallest bucket >= n (a power of two, or the next of
`pdyn.config.cudagraph_buckets`) when the graph's guard facts still hold at that value; beyond the
last bucket, or where a fact would fail, it runs unpadded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy
import torch
import torch.fx

from pdyn.backends.cudagraphs.dims import analyse, s_dims
from pdyn.shapes.graph_meta import EXPR, SYMBOLS, SymbolBinding


@dataclass
class PadPlan:
    """Where the padded symbols sit in one graph's inputs and outputs."""

    symbols: dict[sympy.Symbol, SymbolBinding]               # padded symbols, where each is read
    inputs: dict[int, list[tuple[int, sympy.Symbol]]]        # placeholder -> its padded dims
    ints: dict[int, sympy.Symbol]                            # int placeholders equal to a symbol
    outputs: list[list[tuple[int, sympy.Symbol]]]            # flat output -> its padded dims
    facts: list[sympy.Basic] = field(default_factory=list)
    ties: dict[sympy.Symbol, sympy.Symbol] = field(default_factory=dict)  # tied symbol -> its group's first
    refused: dict[sympy.Symbol, str] = field(default_factory=dict)  # the others, and why
    facts_hold: dict[tuple[int, ...], bool] = field(default_factory=dict)  # padded values -> facts hold there


def plan(gm: torch.fx.GraphModule) -> PadPlan:
    verdicts, ties = analyse(gm)
    symbols_meta = gm.meta.get(SYMBOLS)
    ok = {s: symbols_meta.bindings[s] for s, why in verdicts.items() if why is None}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    inputs: dict[int, list[tuple[int, sympy.Symbol]]] = {}
    ints: dict[int, sympy.Symbol] = {}
    for i, node in enumerate(placeholders):
        dims = [(d, s) for s in ok for d in s_dims(node, s)]
        if dims:
            inputs[i] = sorted(dims)
        if node.meta.get(EXPR) in ok:
            ints[i] = node.meta[EXPR]
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    flat = list(out) if isinstance(out, (tuple, list)) else [out]
    outputs = [sorted((d, s) for s in ok for d in s_dims(o, s)) for o in flat]
    facts = list(symbols_meta.facts) if symbols_meta is not None else []
    return PadPlan(ok, inputs, ints, outputs, facts, ties, {s: w for s, w in verdicts.items() if w})


def bucket(n: int, buckets: tuple[int, ...] | None) -> int:
    """The size `n` runs as: the next bucket up, or `n` itself beyond the last one."""
    if buckets is None:
        return 1 << max(n - 1, 0).bit_length()
    return next((b for b in sorted(buckets) if b >= n), n)


def padded_sizes(p: PadPlan, args: list[Any], buckets: tuple[int, ...] | None) -> dict[sympy.Symbol, tuple[int, int]]:
    """Each padded symbol's (actual, padded) value in this call; a symbol whose bucket would break a
    guard fact keeps its value."""
    sizes: dict[sympy.Symbol, tuple[int, int]] = {}
    for s, b in p.symbols.items():
        n = args[b.placeholder].shape[b.dim]
        sizes[s] = (n, bucket(n, buckets))
    if any(sizes[t][0] != sizes[first][0] for t, first in p.ties.items()):
        return {s: (n, n) for s, (n, _) in sizes.items()}  # tied symbols differ: the analysis does not hold
    if p.facts and any(n != m for n, m in sizes.values()):
        padded = tuple(m for _, m in sizes.values())
        holds = p.facts_hold.get(padded)
        if holds is None:  # NOTE: sympy substitution costs milliseconds: once per bucket, not per call
            subs = {s: m for s, (n, m) in sizes.items()}
            holds = p.facts_hold[padded] = not any(f.subs(subs) == sympy.false for f in p.facts)
        if not holds:
            sizes = {s: (n, n) for s, (n, _) in sizes.items()}
    return sizes


def padded_shape(t: torch.Tensor, dims: list[tuple[int, sympy.Symbol]],
                 sizes: dict[sympy.Symbol, tuple[int, int]]) -> tuple[int, ...]:
    shape = list(t.shape)
    for d, s in dims:
        shape[d] = sizes[s][1]
    return tuple(shape)


def region(t: torch.Tensor, dims: list[tuple[int, sympy.Symbol]], sizes: dict[sympy.Symbol, tuple[int, int]]) -> torch.Tensor:
    """The unpadded part of a padded tensor `t` (a view)."""
    for d, s in dims:
        n, m = sizes[s]
        if n != m:
            t = t.narrow(d, 0, n)
    return t


def pad_args(p: PadPlan, args: list[Any], sizes: dict[sympy.Symbol, tuple[int, int]]) -> list[Any]:
    """New arguments padded with zeros (what the CPU tests run; the CUDA runner keeps static
    buffers instead)."""
    out = list(args)
    for i, dims in p.inputs.items():
        t = args[i]
        big = torch.zeros(padded_shape(t, dims, sizes), dtype=t.dtype, device=t.device)
        region(big, dims, sizes).copy_(t)
        out[i] = big
    for i, s in p.ints.items():
        out[i] = sizes[s][1]
    return out


def unpad_outputs(p: PadPlan, outputs: Any, sizes: dict[sympy.Symbol, tuple[int, int]]) -> Any:
    flat = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    cut = [region(o, dims, sizes) if isinstance(o, torch.Tensor) else o for o, dims in zip(flat, p.outputs)]
    if isinstance(outputs, tuple):
        return tuple(cut)
    return cut if isinstance(outputs, list) else cut[0]
