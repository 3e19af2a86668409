"""Checking many tensor guards in one C call: the parameters and buffers of a model, reached through
module attributes, are most of a whole model's guard conditions and read the same on every call.

The generated fast check passes them all to one callable, which is first the guards' own Python
conditions; once a call passes those, the same facts are built into torch's C `TensorGuards` from
that call's tensors and the callable is rebound to its `check`. The C check is at least as strict as
the Python one (it also compares dispatch keys), so where it rejects the caller runs the full Python
check: accepting and rejecting stay exactly the Python check's.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from pdyn.guards.tensor_guards import TensorGuard
from pdyn.sources import AttrSource, GlobalSource, ModuleSource, Source

try:  # internal to torch: used where it exists and behaves (checked on the first tensors it sees)
    from torch._C._dynamo.guards import TensorGuards as _CTensorGuards
except ImportError:  # pragma: no cover - torch builds without dynamo's C guards
    _CTensorGuards = None

# Types whose Python-visible dtype, device, sizes and strides are the C tensor's own: a subclass
# with `__torch_function__` could answer `.dtype` differently from the C check, so it stays in Python.
BATCHED_TYPES = (torch.Tensor, torch.nn.Parameter)


def batchable(guard: TensorGuard) -> bool:
    """Checked in the batch: a plain tensor or parameter reached through an attribute or a global
    (a model's weights), not a frame argument, whose checks stay first and inline where a cache
    line's other entries reject cheaply."""
    return guard.type in BATCHED_TYPES and _held_by_object(guard.source)


def _held_by_object(src: Source | None) -> bool:
    while src is not None:
        if isinstance(src, (AttrSource, GlobalSource, ModuleSource)):
            return True
        src = getattr(src, "base", None)
    return False


class TensorBatch:
    """The callable the fast check passes its batched tensors to, living in the check's scope as
    `name`: the Python conditions until a call passes them, then torch's C check when it agrees."""

    def __init__(self, guards: list[TensorGuard], python_check: Callable[..., bool],
                 scope: dict[str, Any], name: str, full: Callable[[Any, Any], str | None]) -> None:
        self.guards = guards
        self.python_check = python_check
        self.scope = scope
        self.name = name
        self.full = full
        self.native = False
        self.stricter = 0  # calls the C check rejected and the full check accepted
        scope[name] = self.first

    def missed(self, L: Any, G: Any) -> str | None:
        """The batch rejected this call: the full check's answer. Where that accepts, the C check was
        stricter than the guards (built in another dispatch-key state, as inside or outside
        `torch.inference_mode()`): it is built again from a later call, twice at most, then the
        Python conditions serve."""
        reason = self.full(L, G)
        if reason is None:
            self.stricter += 1
            self.native = False
            self.scope[self.name] = self.first if self.stricter < 3 else self.python_check
        return reason

    def first(self, *tensors: Any) -> bool:
        ok = self.python_check(*tensors)
        if ok:
            self.scope[self.name] = self._native(tensors) or self.python_check
        return ok

    def _native(self, tensors: tuple[Any, ...]) -> Callable[..., bool] | None:
        """torch's C check over these tensors, or None where it is missing or disagrees. The C check
        rejects a tensor passed twice (tied weights): each is passed once, and the callable checks
        that the others are still that very tensor."""
        if _CTensorGuards is None:
            return None
        first: dict[int, int] = {}
        same: list[tuple[int, int]] = []   # (position, earlier position of the same tensor)
        for i, t in enumerate(tensors):
            if id(t) in first:
                if _facts(self.guards[i]) != _facts(self.guards[first[id(t)]]):
                    return None
                same.append((i, first[id(t)]))
            else:
                first[id(t)] = i
        keep = sorted(first.values())
        guards = [self.guards[i] for i in keep]
        sizes = [list(g.sizes) for g in guards]
        strides = [list(g.strides) if g.strides is not None else [None] * len(g.sizes) for g in guards]
        try:
            native = _CTensorGuards(*(tensors[i] for i in keep), dynamic_dims_sizes=sizes,
                                    dynamic_dims_strides=strides, tensor_check_names=[str(g.source) for g in guards])
            check = native.check if not same else _select(native.check, len(tensors), keep, same)
            agrees = check(*tensors) is True
        except Exception:  # another torch's signature or semantics: the Python conditions serve
            return None
        self.native = agrees
        return check if agrees else None


def _facts(guard: TensorGuard) -> tuple[Any, ...]:
    return guard.dtype, guard.device, guard.requires_grad, guard.sizes, guard.strides, guard.conj, guard.neg


def _select(check: Callable[..., bool], n: int, keep: list[int], same: list[tuple[int, int]]) -> Callable[..., bool]:
    """`check` over the positions `keep`, after each of `same`'s positions is the tensor it was."""
    args = [f"t{i}" for i in range(n)]
    aliases = " and ".join(f"t{i} is t{j}" for i, j in same)
    source = (f"def select({', '.join(args)}):\n"
              f"    return {aliases} and check({', '.join(args[i] for i in keep)})\n")
    scope: dict[str, Any] = {"check": check}
    exec(compile(source, "<pdyn tensor batch>", "exec"), scope)
    return scope["select"]
