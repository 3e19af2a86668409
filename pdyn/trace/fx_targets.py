"""The target a graph node calls, as fx will write it.

fx prints a function of torch's by a qualified name (`torch.broadcast_tensors`) and the generated
code looks that name up again. For the builtins of `torch._VF` that torch wraps in Python under
the same name (`broadcast_tensors`, `cdist`, `einsum`, `meshgrid`, ...: the wrapper takes other
arguments), the name finds the wrapper, not the function the trace called. Such a target is
recorded through a function of pdyn's, which fx keeps as the object itself.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch
import torch.fx.node


def exact_target(target: Any) -> Any:
    """`target`, or a function calling it where fx's name for it would find something else."""
    if not callable(target) or isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return target
    try:
        return _exact(target)
    except TypeError:  # unhashable: not one of torch's functions
        return target


@functools.lru_cache(maxsize=None)
def _exact(target: Callable[..., Any]) -> Callable[..., Any]:
    if _resolves_to_itself(target):
        return target

    def call(*args: Any, **kwargs: Any) -> Any:
        return target(*args, **kwargs)

    call.__name__ = call.__qualname__ = f"exact_{getattr(target, '__name__', 'op')}"
    call.__module__ = __name__
    call.__wrapped__ = target  # type: ignore[attr-defined]
    return call


def _resolves_to_itself(target: Callable[..., Any]) -> bool:
    try:
        name = torch.fx.node._get_qualified_name(target)
    except Exception:  # noqa: BLE001 (fx cannot name it: it keeps the object)
        return True
    parts = name.split(".")
    if parts[0] != "torch":
        return True   # fx keeps objects that are not torch's as themselves
    obj: Any = torch
    for part in parts[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return obj is target
