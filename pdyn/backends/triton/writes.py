"""Writes in a lowered graph: which nodes write a tensor, which memory each write may reach, and
how each is lowered, decided before the walk.

The IR reads lazily (a value is a closure run by the kernel that consumes it), so a write must
not be observed too early or too late. Two plans, per write:
- functional: the written tensor is the graph's own and nothing else views it (T5's
  `position_bias += mask`): the write becomes its out-of-place op (`add` for `add_`, cast to the
  written dtype) and later reads of the tensor read the new value; no memory is written.
- in memory: every node whose result may share memory with the written tensor (views of it, what
  it views, graph inputs) runs with torch on live tensors (no contiguous copies that could go
  stale), and the write runs as one torch call after the lazy values that read the old contents
  are stored (GraphLowering.before_write).
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

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        self.parent: dict[Any, Any] = {}
        for node in gm.graph.nodes:
            if node.op in ("placeholder", "get_attr"):
                self.union(node, EXTERNAL)
            elif node.op in ("call_function", "call_method", "call_module"):
                for other in self._may_view(node):
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


class WritePlan:
    """Per write node: lowered functionally or in memory; the nodes that must run on live tensors.
    A write in `forced` (its functional lowering failed to compile) is in memory."""

    def __init__(self, gm: torch.fx.GraphModule, lowerings: dict[Any, Any],
                 forced: Any = frozenset()) -> None:
        self.classes = AliasClasses(gm)
        self.functional: dict[torch.fx.Node, Op] = {}
        self.live: set[torch.fx.Node] = set()  # nodes run with torch on live tensors
        members: dict[Any, list[torch.fx.Node]] = {}
        for node in gm.graph.nodes:
            members.setdefault(self.classes.find(node), []).append(node)
        for cls, nodes in members.items():
            writes = [n for n in nodes if mutates(n)]
            ops = [functional_op(n) for n in writes]
            if all(op is not None and op in lowerings and n not in forced and self._private(n.args[0], nodes)
                   for n, op in zip(writes, ops)):
                self.functional.update((n, op) for n, op in zip(writes, ops) if op is not None)
            else:  # NOTE: one write in memory puts the whole class in memory
                self.live.update(n for n in nodes if n.op not in ("placeholder", "get_attr"))

    def _private(self, target: Any, members: list[torch.fx.Node]) -> bool:
        """Whether only `target` and writes of it are in its class: no view, no input, no attribute."""
        if not isinstance(target, torch.fx.Node) or self.classes.find(EXTERNAL) is self.classes.find(target):
            return False
        return all(m is target or (mutates(m) and m.args and m.args[0] is target) for m in members)


def buffer_names(value: Any) -> set[str]:
    """The buffers a lowered value (or a tuple of them) is exactly the contents of."""
    if isinstance(value, (tuple, list)):
        return set().union(*[buffer_names(v) for v in value]) if value else set()
    buffer = getattr(value, "buffer", None)
    return {buffer.name} if buffer is not None else set()


def lower_write(lx: Any, node: torch.fx.Node, reason: str) -> Any:
    """`node` writes memory: the written tensors become storage (a lazy value is stored first),
    the lazy values that read the old contents and are read after `node` are stored before it,
    then the write runs as one torch call. An op that returns what it wrote (`add_`) returns that
    tensor's value, which later kernels read in memory, after the write."""
    targets = [w for w in written_args(node) if isinstance(w, torch.fx.Node)]
    for w in targets:
        lx.env[w] = lx.storage(lx.env[w])
    classes = {lx.writes.classes.find(w) for w in targets}
    names: set[str] = set()
    for n, value in lx.env.items():
        if lx.writes.classes.find(n) in classes:
            names |= buffer_names(value)
    lx.store_pending(names, node)
    call = lx.torch_call("write", node)
    lx.note_extern(node, "write", reason)
    fake = lx.fake(node)
    if targets and node.args and node.args[0] is targets[0] and isinstance(fake, torch.Tensor):
        return lx.env[targets[0]]  # NOTE: the same memory: in-place ops return their input
    return lx.result_value(node, call, fake, live=True)
