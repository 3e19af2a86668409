"""Training through pdyn's kernels: a captured graph whose inputs require grad becomes a forward
graph and a backward graph over the same size symbols (joint.py: derivative rules per op row,
rules*.py; the partitioner, partition.py, decides what the forward saves), each compiled by the
backend given (Triton's), behind one `torch.autograd.Function` (function.py). The backward is
compiled at the first backward, for the outputs that received a gradient.

In-place writes to the graph's own tensors become out-of-place ops first (writes.py). Inside
DistributedDataParallel's forward a graph is cut at DDP's gradient buckets first, each piece its
own Function, so all-reduce overlaps the backward (buckets.py). A graph
pdyn cannot differentiate (a write eager's autograd could observe, a module call, an autocast
block, a data-dependent size, a random op without a rule) runs with torch as a whole, with one
log line.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import torch
import torch.fx

from pdyn.backends.autograd.writes import functionalize
from pdyn.backends.autograd.function import GraphFunction, TrainingStep
from pdyn.backends.autograd.buckets import cut_for_ddp
from pdyn.backends.autograd.joint import build_joint
from pdyn.backends.autograd.partition import NotDifferentiable
from pdyn.backends.report import COUNT_LATER, REPORT, BackendReport, report_of
from pdyn.ops.effects import mutates

log = logging.getLogger("pdyn.lowering")



def trains(example_inputs: list[Any]) -> bool:
    """Whether a call with these inputs records autograd history (the entry's guard checks grad
    mode and each input's requires_grad, so this holds on every call the compiled graph serves)."""
    return torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in example_inputs)


def training_backend(gm: torch.fx.GraphModule, example_inputs: list[Any],
                     lower: Callable[[torch.fx.GraphModule, list[Any]], Callable[..., Any]]) -> Callable[..., Any]:
    """A callable running `gm` through one autograd Function whose forward and backward graphs
    `lower` compiled (called under no_grad), or `gm` itself where pdyn cannot build the backward."""
    try:
        functionalize(gm)
        _check(gm)
        cut = cut_for_ddp(gm, example_inputs, lower)
        if cut is not None:  # under DDP: one Function per gradient bucket (buckets.py)
            return cut
        joint = build_joint(gm, example_inputs)
        with torch.no_grad():
            forward = lower(joint.forward, list(example_inputs))
    except NotDifferentiable as e:
        log.info("pdyn autograd: graph runs with torch: %s", e)
        return _with_torch(gm, f"training: {e}")
    except Exception as e:  # noqa: BLE001  # NOTE: never wrong: an internal error runs the graph with torch
        log.warning("pdyn autograd: running this graph with torch (%s: %s)", type(e).__name__, e)
        return _with_torch(gm, f"training: {type(e).__name__}: {e}")
    def lower_backward(graph: torch.fx.GraphModule) -> Callable[..., Any]:
        with torch.no_grad():
            return lower(graph, [n.meta["example_value"] for n in graph.graph.nodes if n.op == "placeholder"])

    def compiled(graph: torch.fx.GraphModule) -> None:  # a backward graph, compiled at a first backward
        gm.meta[REPORT] = _joint_report(report_of(gm), report_of(graph))
        call.pdyn_backward = getattr(step.backward, "pdyn_triton", None)  # type: ignore[attr-defined]
        count = gm.meta.get(COUNT_LATER)
        if count is not None:
            count(report_of(graph))

    step = TrainingStep(joint, forward, lower_backward, compiled)
    gm.meta[REPORT] = report_of(joint.forward)

    # NOTE: an input no output's gradient reaches (unused, or read only by non-differentiable
    # ops) must not become an edge of the Function: autograd would walk into its history, which
    # may belong to an earlier call's graph whose saved tensors are already freed
    reached = set(joint.grad_inputs)
    unreached = frozenset(i for i in range(len(example_inputs)) if i not in reached)

    def call(*args: Any) -> Any:
        if any(isinstance(args[i], torch.Tensor) and args[i].requires_grad for i in unreached):
            args = tuple(a.detach() if i in unreached and isinstance(a, torch.Tensor) else a
                         for i, a in enumerate(args))
        return GraphFunction.apply(step, *args)

    call.assumptions = list(getattr(forward, "assumptions", []))  # type: ignore[attr-defined]
    call.pdyn_triton = getattr(forward, "pdyn_triton", None)  # type: ignore[attr-defined]
    call.pdyn_backward = None  # type: ignore[attr-defined]  # the full backward's, once compiled
    call.pdyn_joint = joint  # type: ignore[attr-defined]
    call.pdyn_step = step  # type: ignore[attr-defined]
    return call


def _check(gm: torch.fx.GraphModule) -> None:
    # NOTE: traced under an ambient autocast, the graph's ops carry autocast's dtypes but no casts:
    # derivative rules would mix dtypes (a crash in the backward); torch's autograd knows the casts
    if any(torch.is_autocast_enabled(device) for device in ("cpu", "cuda")):
        raise NotDifferentiable("traced under autocast")
    for node in gm.graph.nodes:
        if node.op == "call_module":
            raise NotDifferentiable(f"module call {node.target}")
        if node.target is torch.amp._enter_autocast:
            raise NotDifferentiable("an autocast block")
        if mutates(node):
            raise NotDifferentiable(f"in-place op {node.name}")


def _joint_report(forward: BackendReport | None, backward: BackendReport | None) -> BackendReport | None:
    """The counters of a training graph: its forward's and its backward's kernels and torch calls."""
    if forward is None or backward is None:
        return forward or backward
    on_torch = forward.on_torch or (f"its backward graph: {backward.on_torch}" if backward.on_torch else None)
    return BackendReport(forward.backend, forward.kernels + backward.kernels, on_torch,
                         forward.externs + backward.externs, forward.lowered + backward.lowered,
                         forward.notes + backward.notes)


def _with_torch(gm: torch.fx.GraphModule, reason: str) -> Callable[..., Any]:
    gm.meta[REPORT] = BackendReport("triton", on_torch=reason)  # counted and warned as graphs_on_torch
    eager = gm.forward

    def run_with_torch(*args: Any) -> Any:
        return eager(*args)

    run_with_torch.pdyn_triton = None  # type: ignore[attr-defined]  # marker for tests
    return run_with_torch
