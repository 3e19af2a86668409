"""The backend half of `pdyn.debug.bisect`: a binary search over one compiled graph's nodes, running
a prefix compiled by the backend and the rest with torch, for the first node whose compiled prefix
gives a wrong graph output."""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.fx

from pdyn.debug.calls import outcome, same
from pdyn.debug.report import BisectReport


def bisect_nodes(gm: torch.fx.GraphModule, inputs: list[Any], backend: Callable[..., Any]) -> BisectReport | None:
    """The first node whose compiled prefix (the rest run by torch) gives a wrong graph output; None
    where the compiled graph agrees with torch."""
    reference = _run(lambda xs: gm(*xs), inputs)
    ops = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")]

    def wrong(k: int) -> bool:
        return not same(reference, _run(lambda xs: _prefix_run(gm, ops[:k], backend, xs), inputs))

    if not wrong(len(ops)):
        return None
    lo, hi = 0, len(ops)   # wrong(lo) is False (all torch), wrong(hi) is True
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if wrong(mid):
            hi = mid
        else:
            lo = mid
    node = ops[hi - 1]
    target = getattr(node.target, "__name__", str(node.target))
    return BisectReport("backend", f"node {node.name} ({target}) of the graph", node.meta.get("loc"),
                        detail=f"the compiled graph is right through {ops[lo - 1].name if lo else 'its inputs'} "
                               f"and wrong once {node.name} is compiled too", node=node)


def copy_graph(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    copied = torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__)
    copied.meta = dict(gm.meta)
    return copied


def _run(call: Callable[[list[Any]], Any], inputs: list[Any]) -> tuple[str, Any]:
    return outcome(lambda a, k: call(list(a)), tuple(inputs), {})


def _prefix_run(gm: torch.fx.GraphModule, prefix: list[torch.fx.Node], backend: Callable[..., Any],
                inputs: list[Any]) -> Any:
    """Compile the graph's first nodes (their values used later are its outputs), run them, and
    run the rest with torch."""
    if not prefix:
        return gm(*inputs)
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for n in placeholders + prefix:
        env[n] = graph.node_copy(n, lambda x: env[x])
    inside = set(prefix)
    live = [n for n in prefix if any(user not in inside for user in n.users)] or [prefix[-1]]
    out = graph.output(tuple(env[n] for n in live))
    out.meta = {}
    sub = torch.fx.GraphModule(gm, graph, class_name="PdynPrefix")
    sub.meta = dict(gm.meta)
    values = backend(sub, list(inputs))(*inputs)
    initial = {**dict(zip(placeholders, inputs)), **dict(zip(live, values))}
    return torch.fx.Interpreter(gm).run(*inputs, initial_env=initial)
