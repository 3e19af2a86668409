"""What a training step keeps for its backward, measured exactly on any device: every tensor saved
for backward passes through `torch.autograd.graph.saved_tensors_hooks` (eager's ops and pdyn's
autograd Function alike, which saves through `ctx.save_for_backward`), and the bytes are summed
once per storage. Storages of the parameters and the inputs are counted apart: they exist without
the step, so saving them costs nothing.

`saved_bytes(step, keep)` runs `step` (a forward, returning its output) and reports; `by_node(out)`
walks the autograd graph behind `out` and lists each node's saved tensors (the per-node view used
to find what one side saves and the other does not). `PeakMemory` measures a step's peak of live
storages on the CPU, where torch.cuda.max_memory_allocated has no counterpart.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


@dataclass
class Saved:
    """Saved storages: `activations` (storage id -> bytes) beyond the parameters and inputs,
    `by_reference` the bytes of saved parameters and inputs, `count` the tensors saved."""

    activations: dict[int, int] = field(default_factory=dict)
    by_reference: dict[int, int] = field(default_factory=dict)
    count: int = 0
    shapes: list[tuple[tuple[int, ...], torch.dtype, bool]] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(self.activations.values())


def storage_key(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.nbytes()


def saved_bytes(step: Callable[[], Any], keep: Iterable[torch.Tensor]) -> tuple[Saved, Any]:
    """Run `step` under the hooks; tensors whose storage is one of `keep`'s (parameters, inputs)
    count as saved by reference. Returns what was saved and `step`'s result (keep it alive until
    the backward, or drop it)."""
    kept = {storage_key(t)[0] for t in keep if isinstance(t, torch.Tensor)}
    saved = Saved()

    def pack(t: torch.Tensor) -> torch.Tensor:
        ptr, nbytes = storage_key(t)
        saved.count += 1
        fresh = ptr not in kept
        saved.shapes.append((tuple(t.shape), t.dtype, fresh))
        (saved.activations if fresh else saved.by_reference)[ptr] = nbytes
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = step()
    return saved, out


def _saved_of(node: Any) -> list[tuple[str, torch.Tensor]]:
    """The tensors an autograd node saved: `_saved_*` attributes of built-in nodes, the
    `saved_tensors` of a custom Function's context."""
    found = []
    if hasattr(node, "saved_tensors"):  # a Python Function's backward node is its ctx
        try:
            found += [(_pdyn_name(node, i), t) for i, t in enumerate(node.saved_tensors)]
        except RuntimeError:
            pass
    for name in dir(node):
        if name.startswith("_saved_"):
            try:
                value = getattr(node, name)
            except RuntimeError:
                continue
            for i, t in enumerate(tree_leaves(value)):
                if isinstance(t, torch.Tensor):
                    found.append((f"{name[7:]}{'' if i == 0 else i}", t))
    return found


def _pdyn_name(ctx: Any, i: int) -> str:
    """Saved item i of pdyn's Function: the forward node it is (its name says its op)."""
    joint = getattr(getattr(ctx, "step", None), "joint", None)
    if joint is None:
        return f"saved[{i}]"
    kind, j = joint.saved[i]
    if kind == "input":
        return f"input {j}"
    outputs = next(n for n in joint.forward.graph.nodes if n.op == "output").args[0]
    return outputs[joint.n_outputs + j].name


def by_node(outputs: Any, keep: Iterable[torch.Tensor]) -> list[str]:
    """One line per saved storage (first node that saved it): node, name, shape, dtype, bytes;
    parameters and inputs are left out."""
    kept = {storage_key(t)[0] for t in keep if isinstance(t, torch.Tensor)}
    seen: set[int] = set(kept)
    lines: list[str] = []
    stack = [o.grad_fn for o in tree_leaves(outputs) if isinstance(o, torch.Tensor) and o.grad_fn is not None]
    visited: set[int] = set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in visited:
            continue
        visited.add(id(node))
        for name, t in _saved_of(node):
            ptr, nbytes = storage_key(t)
            if ptr in seen:
                continue
            seen.add(ptr)
            lines.append(f"{node.name():36s} {name:28s} {str(tuple(t.shape)):22s} {str(t.dtype):14s} {nbytes:>9d}")
        stack.extend(n for n, _ in node.next_functions)
    return lines


class PeakMemory(TorchDispatchMode):
    """The most bytes of storages made under it that were alive at once, checked after every op
    (Triton wrappers allocate through torch too). Storages that existed before (parameters,
    inputs) are not counted. Exact on any device; slow (a walk of the live set per op)."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, tuple[StorageWeakRef, int]] = {}
        self.peak = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if isinstance(t, torch.Tensor) and not t.is_meta:
                storage = t.untyped_storage()
                known = self.live.get(storage.data_ptr())
                if known is None or known[0].expired():
                    self.live[storage.data_ptr()] = (StorageWeakRef(storage), storage.nbytes())
        total = self._total()
        if total > self.peak:  # NOTE: Triton's interpreter leaves a launch's arguments in cycles
            gc.collect()
            total = self._total()
        self.peak = max(self.peak, total)
        return out

    def _total(self) -> int:
        total = 0
        for key, (ref, nbytes) in list(self.live.items()):
            if ref.expired():
                del self.live[key]
            else:
                total += nbytes
        return total
