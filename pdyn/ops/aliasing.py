"""Which results of an fx graph may share memory, and which in-place writes can become their
out-of-place op: the Triton lowering (backends/triton/writes.py) and the training graphs
(backends/autograd/writes.py) decide from the same classes.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx

from pdyn.ops import OPS, Op, op_of
from pdyn.ops.effects import conditional_writes, inplace_flag, mutates, written_args

EXTERNAL = "external"  # the class of graph inputs and attributes: they may share memory


class AliasClasses:
    """Union-find over the graph's nodes: two nodes are in one class when their results may share
    memory (a node whose op does not surely allocate may view any tensor it is given; a write
    aliases what it writes; graph inputs and attributes may all view each other)."""

    def __init__(self, gm: torch.fx.GraphModule, tensors_only: bool = False) -> None:
        """`tensors_only`: values the trace stamped as no tensor (sizes, numbers) view nothing and
        are viewed by nothing (`x.view(n, s)` with `s = y.size(1)` does not alias x with y)."""
        self.parent: dict[Any, Any] = {}
        for node in gm.graph.nodes:
            if node.op in ("placeholder", "get_attr"):
                self.union(node, EXTERNAL)
            elif node.op in ("call_function", "call_method", "call_module"):
                if tensors_only and _not_a_tensor(node) and not mutates(node):  # `x[i] = v` returns None
                    continue
                for other in self._may_view(node):
                    if not (tensors_only and _not_a_tensor(other)):
                        self.union(node, other)

    @staticmethod
    def _may_view(node: torch.fx.Node) -> list[Any]:
        if mutates(node):
            return [w for w in written_args(node) if isinstance(w, torch.fx.Node)]
        if node.op != "call_module" and op_of(node).allocates:
            return []
        return list(node.all_input_nodes)

    def find(self, x: Any) -> Any:
        root = x
        while self.parent.get(root, root) is not root:
            root = self.parent[root]
        while x is not root:  # path compression
            self.parent[x], x = root, self.parent.get(x, x)
        return root

    def union(self, a: Any, b: Any) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[ra] = rb


def _not_a_tensor(node: torch.fx.Node) -> bool:
    """Stamped by the trace as a Python value (a size, a number): it cannot share a tensor's memory."""
    example = node.meta.get("example_value", torch.empty(0))
    return not isinstance(example, (torch.Tensor, tuple, list))


def functional_op(node: torch.fx.Node) -> Op | None:
    """The out-of-place row of an in-place node that writes its first argument (`add` for `add_`
    and `+=`), where writing means nothing more; None otherwise (`out=`, `inplace=True`, a write
    decided by another argument, a row without a functional twin)."""
    if node.op not in ("call_function", "call_method") or node.kwargs.get("out") is not None:
        return None
    op = op_of(node)
    if op.mutates != 0 or conditional_writes(node) or inplace_flag(node) or not op.name.endswith("_"):
        return None
    return OPS.get(op.name[:-1])


def members_by_class(gm: torch.fx.GraphModule, classes: AliasClasses) -> dict[Any, list[torch.fx.Node]]:
    """The graph's nodes grouped by alias class, each group in graph order."""
    members: dict[Any, list[torch.fx.Node]] = {}
    for node in gm.graph.nodes:
        members.setdefault(classes.find(node), []).append(node)
    return members


def private_write(classes: AliasClasses, node: torch.fx.Node, members: list[torch.fx.Node],
                  chains: bool = False) -> bool:
    """Whether the tensor `node` writes (its first argument) is the graph's own and seen only
    through itself: its class holds it and writes of it, no view, no input, no attribute. With
    `chains`, writes of earlier writes' results count too (`h += b; h.mul_(2)`: one tensor)."""
    target = node.args[0] if node.args else None
    if not isinstance(target, torch.fx.Node) or classes.find(EXTERNAL) is classes.find(target):
        return False
    if not chains:
        return all(m is target or (mutates(m) and m.args and m.args[0] is target) for m in members)
    inside = set(members)
    roots = [m for m in members if not mutates(m)]
    return len(roots) == 1 and all(not mutates(m) or (m.args and m.args[0] in inside) for m in members)
