"""Calls that `pdyn.debug.bisect` makes and compares: the function optimized afresh in a cache of
its own, one call's outcome (its value, or the type of what it raised), and the comparison of two."""

from __future__ import annotations

import copy
import types
from typing import Any, Callable

import torch

from pdyn.base.config import config as settings
from pdyn.hook.eval_frame import CodeCache, Frame, make_wrapper
from pdyn.hook.recompile_policy import CodeHistory


def probe(frame: Frame, backend: Callable[..., Any], dynamic: bool | None = None,
          history: CodeHistory | None = None) -> Callable[..., Any]:
    """`frame`'s function optimized afresh with `backend`, in a cache of its own (starting from a
    copy of `history`: the same sizes are dynamic as in the frame's own later compiles)."""
    dynamic = frame.dynamic if dynamic is None else dynamic
    cache = CodeCache(frame.code)
    if history is not None:
        cache.history = copy.deepcopy(history)
    wrapper = make_wrapper(Frame(frame.fn, backend, settings, frame.fullgraph, cache, dynamic))
    return lambda a, k: wrapper(*a, **k)


def clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(clone(v) for v in value)
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    return value if isinstance(value, (torch.nn.Module, types.FunctionType)) else copy.copy(value)


def outcome(call: Callable[..., Any], args: tuple, kwargs: dict) -> tuple[str, Any]:
    torch.manual_seed(0)
    try:
        return "value", call(clone(args), clone(kwargs))
    except Exception as e:  # noqa: BLE001  # the exception is what is compared
        return "raised", type(e)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and len(a) == 2 and a[0] in ("value", "raised") and isinstance(b, tuple):
        return a[0] == b[0] and (a[1] is b[1] if a[0] == "raised" else same(a[1], b[1]))
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape \
                or a.dtype != b.dtype:
            return False
        return bool(torch.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)) if a.is_floating_point() \
            else bool(torch.equal(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)
