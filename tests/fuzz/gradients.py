"""The fuzzer's gradient mode (`python -m tests.fuzz --grad`): every float tensor argument requires
grad, and after a call whose results agree, a backward from a weighted sum of every float result
that requires grad runs on each side; each argument's `.grad` must then agree (None against a
tensor is a difference too: an optimizer skips a None gradient). An exception in one backward
and not the other is a crash or a mismatch, as for the call itself.
"""

from __future__ import annotations

import traceback
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

from tests.fuzz.compare import difference


def requiring_grad(args: list[Any]) -> list[Any]:
    """The arguments with each float tensor a leaf that requires grad (same values and strides)."""
    def one(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value.detach().requires_grad_(True)
        if isinstance(value, list):
            return [one(v) for v in value]
        if isinstance(value, tuple):
            return tuple(one(v) for v in value)
        if isinstance(value, dict):
            return {k: one(v) for k, v in value.items()}
        return value
    return [one(a) for a in args]


def leaves(args: Any) -> list[torch.Tensor]:
    return [t for t in tree_leaves(args) if isinstance(t, torch.Tensor) and t.is_leaf and t.requires_grad]


def weighted_loss(result: Any) -> torch.Tensor | None:
    """A scalar from every float result that requires grad, a different weight per element (a
    plain sum hides a transposed or misplaced gradient); None when no result requires grad."""
    total = None
    for out in tree_leaves(result):
        if isinstance(out, torch.Tensor) and out.is_floating_point() and out.requires_grad:
            w = torch.arange(out.numel(), dtype=torch.float64).reshape(out.shape).sin().to(out.dtype)
            term = (out * w).sum().double()
            total = term if total is None else total + term
    return total


def _backward(result: Any, args: Any) -> tuple[list[Any] | None, Exception | None, str]:
    loss = weighted_loss(result)
    if loss is None:
        return None, None, ""
    try:
        loss.backward()
    except Exception as e:  # noqa: BLE001  # NOTE: an exception is a result to compare
        return None, e, traceback.format_exc(limit=-8)
    return [t.grad for t in leaves(args)], None, ""


def compare_backward(actual: Any, expected: Any, pdyn_args: Any, eager_args: Any, backend: str,
                     outcome: Any) -> tuple[str, str] | None:
    """Both backwards; a failure (status, detail) or None."""
    outcome.phase = "eager"
    theirs, their_exc, _ = _backward(expected, eager_args)
    outcome.phase = "pdyn"
    ours, our_exc, trace = _backward(actual, pdyn_args)
    if their_exc is None and our_exc is not None:
        outcome.trace = trace
        return "crash", f"{type(our_exc).__name__} in backward: {str(our_exc).strip()[:200]}"
    if their_exc is not None and (our_exc is None or type(our_exc) is not type(their_exc)):
        got = "returned" if our_exc is None else f"raised {type(our_exc).__name__}"
        return "eager_error_mismatch", f"{type(their_exc).__name__}: eager's backward raised, pdyn's {got}"
    found = difference(ours, theirs, "gradients", backend)
    return None if found is None else ("wrong", found)
