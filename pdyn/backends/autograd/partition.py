"""The partitioner: which forward values the backward reads saved, and which it recomputes.

A forward value the backward needs is, in order of preference: a size (rebuilt from the size
symbols, never saved), a graph input (saved by reference: no memory beyond eager's), a cheap
deterministic op (pointwise, conversion or view: recomputed from its own inputs, recursively),
or saved (a forward output the autograd Function keeps: matmul, reduction, extern and random
results). A cheap op is recomputed only where that keeps no more bytes than saving it would
(`recompute_bytes`). A random op is never recomputed: its numbers would differ from the forward's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.fx

from pdyn.ops import op_of
from pdyn.ops.catalogue import BINARY, CONVERSIONS, UNARY
from pdyn.shapes.graph_meta import EXPR, SIZE_NODE, SIZES

if TYPE_CHECKING:
    from pdyn.backends.autograd.builder import BackwardBuilder

VIEWS = frozenset("""view reshape view_as reshape_as expand expand_as flatten unflatten permute transpose t
squeeze unsqueeze broadcast_to""".split())
DROPOUTS = frozenset({"dropout", "alpha_dropout", "feature_alpha_dropout"})
CHEAP = frozenset(UNARY + BINARY + CONVERSIONS) - DROPOUTS | VIEWS


def nbytes(node: torch.fx.Node) -> int:
    """The bytes of a node's value at the compile's sizes (its example's)."""
    fake = node.meta.get("example_value")
    return fake.numel() * fake.element_size() if isinstance(fake, torch.Tensor) else 0


class NotDifferentiable(Exception):
    """The graph has an op whose backward pdyn cannot build: the graph runs with torch."""


class Partitioner:
    """Decides per forward node; `needs` holds the nodes a gradient flows to (from an input that
    requires grad), `fake_mode` the fake mode of the forward's examples."""

    def __init__(self, needs: set[torch.fx.Node], fake_mode: Any) -> None:
        self.needs = needs
        self.fake_mode = fake_mode

    def needs_grad(self, node: torch.fx.Node) -> bool:
        return node in self.needs

    def recomputable(self, node: torch.fx.Node) -> bool:
        if node.op not in ("call_function", "call_method"):
            return False
        op = op_of(node)
        if op.name not in CHEAP or op.draws_random or op.mutates is not None:
            return False
        return isinstance(node.meta.get("example_value"), torch.Tensor) and node.meta.get(SIZES) is not None

    def resolve(self, bx: BackwardBuilder, node: torch.fx.Node) -> Any:
        """`node`'s value in the backward graph (called once per node; the builder caches it)."""
        if node.meta.get(SIZE_NODE) or (node.op == "placeholder" and EXPR in node.meta):
            if node.meta.get(EXPR) is None:
                raise NotDifferentiable(f"the backward reads {node.name}, a size without an expression")
            return bx.size(node.meta[EXPR])
        if not isinstance(node.meta.get("example_value"), torch.Tensor):
            raise NotDifferentiable(f"the backward reads {node.name}, which is no tensor")
        if self.recomputable(node) and self.recompute_bytes(bx, node) <= nbytes(node):
            return bx.copy(node, bx.primal(node.args), bx.primal(node.kwargs))
        return bx.save(node)

    def recompute_bytes(self, bx: BackwardBuilder, node: torch.fx.Node) -> int:
        """The bytes the forward would save so the backward can recompute `node`: its inputs
        (through cheap ops, recursively) that the backward has no value of yet, are no graph
        input (kept anyway) and are not recomputable themselves. Recomputing `x + y` where both
        are matmul outputs nothing else needs would keep two tensors where saving the sum keeps
        one; recomputing a float32 cast of a bfloat16 value keeps the half-size source."""
        frontier: dict[torch.fx.Node, int] = {}
        seen: set[torch.fx.Node] = set()
        stack = list(node.all_input_nodes)
        while stack:
            value = stack.pop()
            if value in seen or value in bx.env or value.op == "placeholder" or value.meta.get(SIZE_NODE):
                continue
            seen.add(value)
            if self.recomputable(value):
                stack.extend(value.all_input_nodes)
            elif isinstance(value.meta.get("example_value"), torch.Tensor):
                frontier[value] = nbytes(value)
        return sum(frontier.values())
