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

from pdyn.ops import Op
from pdyn.ops.aliasing import AliasClasses, functional_op, members_by_class, private_write
from pdyn.ops.effects import mutates, written_args


class WritePlan:
    """Per write node: lowered functionally or in memory; the nodes that must run on live tensors.
    A write in `forced` (its functional lowering failed to compile) is in memory."""

    def __init__(self, gm: torch.fx.GraphModule, lowerings: dict[Any, Any],
                 forced: Any = frozenset()) -> None:
        self.classes = AliasClasses(gm)
        self.functional: dict[torch.fx.Node, Op] = {}
        self.live: set[torch.fx.Node] = set()  # nodes run with torch on live tensors
        for nodes in members_by_class(gm, self.classes).values():
            writes = [n for n in nodes if mutates(n)]
            ops = [functional_op(n) for n in writes]
            if all(op is not None and op in lowerings and n not in forced and private_write(self.classes, n, nodes)
                   for n, op in zip(writes, ops)):
                self.functional.update((n, op) for n, op in zip(writes, ops) if op is not None)
            else:  # NOTE: one write in memory puts the whole class in memory
                self.live.update(n for n in nodes if n.op not in ("placeholder", "get_attr"))


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
