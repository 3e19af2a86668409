"""CUDA graphs around a compiled graph: `with_cudagraphs(backend)` is a backend that compiles with
`backend` and returns a GraphRunner (runner.py) that captures each padded shape after a warmup and
replays it. `pdyn.optimize(..., mode="reduce-overhead")` or `pdyn.config.cudagraphs = True`
(PDYN_CUDAGRAPHS=1) turn it on; the log topic `cudagraphs` (PDYN_LOGS=cudagraphs) says what was
captured, what was padded, and why a graph runs uncaptured.

A graph runs uncaptured (as compiled) when its inputs are not all on the GPU, when it writes an
input (a replay would write the runner's copy), when a size depends
on data (a symbol no input's dim binds), when it runs with torch (the eager backend, or the Triton
backend's whole-graph fallback), when it draws random numbers, or when capturing fails (a fallback
that synchronizes).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import torch
import torch.fx

from pdyn.backends.cudagraphs.pad import plan as pad_plan
from pdyn.backends.cudagraphs.runner import GraphRunner
from pdyn.base.config import config
from pdyn.ops.effects import draws_random, writes_an_input
from pdyn.shapes.graph_meta import SIZES, STRIDES, SYMBOLS

log = logging.getLogger("pdyn.cudagraphs")
_WRAPPED: dict[tuple[int, bool], tuple[Any, Callable[..., Any]]] = {}  # by id: any callable is a backend


def with_cudagraphs(backend: Callable[..., Any], always: bool) -> Callable[..., Any]:
    """`backend` behind CUDA graphs: always (mode="reduce-overhead"), or where
    `pdyn.config.cudagraphs` is on when a graph compiles. One wrapper per backend and flag, so that
    optimized functions keep sharing their caches."""
    key = (id(backend), always)
    if key not in _WRAPPED or _WRAPPED[key][0] is not backend:
        def cudagraphs(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
            compiled = backend(gm, example_inputs)
            settings = config.snapshot()
            if not (always or settings.cudagraphs):
                return compiled
            return wrap(compiled, gm, example_inputs, settings.cudagraph_buckets, settings.cudagraph_limit)

        cudagraphs.__name__ = getattr(backend, "__name__", "backend")
        cudagraphs.pdyn_inner = backend  # type: ignore[attr-defined]
        _WRAPPED[key] = (backend, cudagraphs)
    return _WRAPPED[key][1]


def wrap(compiled: Callable[..., Any], gm: torch.fx.GraphModule, example_inputs: list[Any],
         buckets: tuple[int, ...] | None, limit: int) -> Callable[..., Any]:
    why = uncapturable(compiled, gm, example_inputs)
    if why is not None:
        log.debug("graph runs uncaptured: %s", why)
        return compiled
    runner = runner_for(compiled, gm, example_inputs, buckets, limit)

    def run(*args: Any) -> Any:
        return runner(*args)

    run.pdyn_cudagraphs = runner  # type: ignore[attr-defined]  # inspected by tests and benchmarks
    run.pdyn_triton = getattr(compiled, "pdyn_triton", None)  # type: ignore[attr-defined]
    run.assumptions = getattr(compiled, "assumptions", [])  # type: ignore[attr-defined]
    return run


def runner_for(compiled: Callable[..., Any], gm: torch.fx.GraphModule, example_inputs: list[Any],
               buckets: tuple[int, ...] | None, limit: int, cls: type[GraphRunner] = GraphRunner) -> GraphRunner:
    """The GraphRunner of one compiled graph, with its padding plan (logged)."""
    plan = pad_plan(gm)
    for s, reason in plan.refused.items():
        log.debug("%s is captured per size: %s", s, reason)
    if plan.symbols:
        log.debug("padding %s up to %s", ", ".join(map(str, plan.symbols)), list(buckets) if buckets else "powers of two")
    symbols = gm.meta[SYMBOLS]
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    varying = [i for i, n in enumerate(placeholders)
               if isinstance(example_inputs[i], torch.Tensor) and n.meta.get(STRIDES) is None]
    by_symbol = {b.placeholder for b in symbols.bindings.values() if b.dim is None}
    scalars = [i for i, v in enumerate(example_inputs) if not isinstance(v, torch.Tensor) and i not in by_symbol]
    return cls(compiled, plan, symbols.bindings, varying, scalars, buckets, limit)


def uncapturable(compiled: Callable[..., Any], gm: torch.fx.GraphModule, example_inputs: list[Any]) -> str | None:
    """Why this compiled graph must run uncaptured, or None."""
    if not torch.cuda.is_available():
        return "no CUDA device"
    tensors = [t for t in example_inputs if isinstance(t, torch.Tensor)]
    if not tensors or any(t.device.type != "cuda" for t in tensors):
        return "an input is not on the GPU" if tensors else "no tensor inputs"
    if getattr(compiled, "__self__", None) is gm or getattr(compiled, "pdyn_triton", False) is None:
        return "the graph runs with torch (eager backend or the backend's fallback)"
    if writes_an_input(gm.graph):  # NOTE: a replay reads and writes the runner's copies of the inputs
        return "the graph writes an input"
    symbols = gm.meta.get(SYMBOLS)
    if symbols is None:
        return "the graph carries no size symbols"
    bound = set(symbols.bindings)
    for node in gm.graph.nodes:
        sizes = node.meta.get(SIZES)
        free = _free(sizes) - bound
        if free:
            return f"{node.name} has a size that depends on data ({', '.join(map(str, free))})"
        if node.op in ("call_function", "call_method") and draws_random(node):
            return f"{node.name} draws random numbers"
    return None


def _free(sizes: Any) -> set[Any]:
    if isinstance(sizes, (tuple, list)):
        return set().union(*(_free(s) for s in sizes)) if sizes else set()
    return set(getattr(sizes, "free_symbols", ()))
