"""Order and fuse the scheduled nodes into steps: kernels (groups of ComputedBuffers) and torch calls.

Greedy and consecutive, so fusion can never create a cycle: a node joins the current kernel when
the kernel can still be generated with it (same iteration space, every read of a buffer made in
the kernel at the index it was written; see codegen.fit and KernelBuilder.load). A buffer is
stored only if something outside its kernel reads it or it is a graph output.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pdyn.backends.triton.codegen import KernelSource, generate_kernel, tiling_of
from pdyn.backends.triton.graph_lowering import GraphLowering
from pdyn.backends.triton.ir import ComputedBuffer, Reduction, SchedulerNode, TorchCall
from pdyn.backends.triton.kernel_builder import CannotFuse

log = logging.getLogger("pdyn.lowering")
MAX_FUSED = 64  # nodes per kernel: bounds compile time and register pressure


@dataclass
class KernelGroup:
    nodes: list[ComputedBuffer]
    source: KernelSource | None = None
    # A reduction kernel that cannot split over r: the same nodes one kernel each, so each
    # reduction can split; the wrapper runs these where the fused kernel would not fill the GPU
    phased: list[KernelGroup] | None = None
    launcher: Any = None  # runtime.KernelLauncher, set by the wrapper


Step = KernelGroup | TorchCall


def live_nodes(lx: GraphLowering) -> list[SchedulerNode]:
    """Drop computed buffers nobody reads (an unused half of var_mean, ...); index checks stay."""
    nodes = list(lx.scheduled)
    while True:
        needed = set(lx.output_buffers) | set(lx.outputs)
        for n in nodes:
            needed |= n.reads
        keep = [n for n in nodes if isinstance(n, TorchCall) or n.effect or n.name in needed]
        if len(keep) == len(nodes):
            return keep
        nodes = keep


def can_fuse(nodes: list[ComputedBuffer], interpret: bool) -> bool:
    if len(nodes) > MAX_FUSED:
        return False
    try:
        generate_kernel(nodes, {n.name for n in nodes}, interpret, layout=False)
    except CannotFuse as e:
        log.debug("not fused: %s", e)
        return False
    return True


def schedule(lx: GraphLowering, interpret: bool) -> list[Step]:
    steps: list[Step] = []
    current: list[ComputedBuffer] = []
    for node in live_nodes(lx):
        if isinstance(node, TorchCall):
            if current:
                steps.append(KernelGroup(current))
                current = []
            steps.append(node)
        elif current and can_fuse(current + [node], interpret):
            current.append(node)
        else:
            if current:
                steps.append(KernelGroup(current))
            current = [node]
    if current:
        steps.append(KernelGroup(current))
    _generate(steps, lx, interpret)
    return steps


def _generate(steps: list[Step], lx: GraphLowering, interpret: bool) -> None:
    reads_by_step = [s.reads if isinstance(s, TorchCall) else
                     frozenset().union(*[n.reads for n in s.nodes]) for s in steps]
    outside = set(lx.output_buffers) | set(lx.outputs)
    for i, step in enumerate(steps):
        if isinstance(step, KernelGroup):
            others = outside.union(*[r for j, r in enumerate(reads_by_step) if j != i])
            stored = {n.name for n in step.nodes if n.name in others}
            try:
                step.source = generate_kernel(step.nodes, stored, interpret)
                step.phased = _phased(step, stored, interpret)
            except Exception as e:
                e.pdyn_nodes = [n.origin for n in step.nodes]  # type: ignore[attr-defined]  # sent to torch
                raise


def _phased(group: KernelGroup, stored: set[str], interpret: bool) -> list[KernelGroup] | None:
    """One kernel per node of a reduction kernel with several nodes and no split variant (a
    softmax over a long dim: max, sum, normalize): a reduction alone can split over r."""
    source = group.source
    assert source is not None
    if not source.tiling.is_reduction or source.split is not None or len(group.nodes) < 2:
        return None
    if not any(isinstance(n.data, Reduction) for n in group.nodes):
        return None
    names = {n.name for n in group.nodes}
    phases = [KernelGroup([n]) for n in group.nodes]
    for sub in phases:
        node = sub.nodes[0]
        read_later = any(node.name in other.reads for other in group.nodes if other is not node)
        sub.source = generate_kernel(sub.nodes, {node.name} & (stored | (names if read_later else set())), interpret)
    return phases
