"""Strict comparison of what eager and pdyn produced: exact Python types (int, float, bool, Size,
tuple), -0.0 against 0.0, nan, tensor dtype/shape/strides/values, containers recursively.

`difference` returns None or one sentence `path: category detail`; the category (type, value,
sign, dtype, shape, strides, values, length, keys) is what the reducer keeps fixed.
"""

from __future__ import annotations

import math
import re
from typing import Any

import torch

# Tensor tolerances: the eager backend runs the same torch kernels (tight), Triton fuses (looser).
VALUE_TYPES = (int, str, bytes, complex, type(None), torch.dtype, torch.device, torch.Size, slice, range)
ADDRESS = re.compile(r"0x[0-9a-f]{6,}")
TOLERANCES = {"eager": (1.3e-6, 1e-5), "triton": (1e-4, 1e-5)}


def difference(actual: Any, expected: Any, path: str = "result", backend: str = "eager") -> str | None:
    if type(actual) is not type(expected):
        names = f"{type(actual).__name__} != {type(expected).__name__}"
        return f"{path}: type {names} ({_short(actual)} vs {_short(expected)})"
    if isinstance(expected, torch.Tensor):
        return _tensor_difference(actual, expected, path, backend)
    if isinstance(expected, float):
        return _float_difference(actual, expected, path, exact=backend == "eager")
    if isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            return f"{path}: length {len(actual)} != {len(expected)} ({_short(actual)} vs {_short(expected)})"
        for i, (a, e) in enumerate(zip(actual, expected)):
            found = difference(a, e, f"{path}[{i}]", backend)
            if found:
                return found
        return None
    if isinstance(expected, dict):
        if difference(list(actual), list(expected), "", backend):  # keys may be tensors: no `==`
            return f"{path}: keys {_short(list(actual))} != {_short(list(expected))}"
        for (k, a), e in zip(actual.items(), expected.values()):
            found = difference(a, e, f"{path}[{_short(k, 30)}]", backend)
            if found:
                return found
        return None
    if isinstance(expected, str) and ADDRESS.sub("0x?", actual) == ADDRESS.sub("0x?", expected):
        return None  # `str(x.size)` names the object's address, which differs between two runs
    if isinstance(expected, VALUE_TYPES) and actual != expected:
        return f"{path}: value {_short(actual)} != {_short(expected)}"
    return None  # other objects (generators, functions) compare by type: their identity differs


def _float_difference(actual: float, expected: float, path: str, exact: bool) -> str | None:
    if math.isnan(expected) or math.isnan(actual):
        return None if math.isnan(expected) and math.isnan(actual) else f"{path}: nan {actual!r} != {expected!r}"
    if expected == 0 and actual == 0 and math.copysign(1, actual) != math.copysign(1, expected):
        return f"{path}: sign {actual!r} != {expected!r}"
    same = actual == expected if exact else math.isclose(actual, expected, rel_tol=1e-4, abs_tol=1e-5)
    return None if same else f"{path}: value {actual!r} != {expected!r}"


def _tensor_difference(actual: torch.Tensor, expected: torch.Tensor, path: str, backend: str) -> str | None:
    for what in ("dtype", "device", "requires_grad"):
        if getattr(actual, what) != getattr(expected, what):
            return f"{path}: {what} {getattr(actual, what)} != {getattr(expected, what)}"
    if actual.shape != expected.shape:
        return f"{path}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    # strides of dims of size 0 or 1 never change which element is read
    if any(n > 1 and a != e for n, a, e in zip(expected.shape, actual.stride(), expected.stride())):
        if expected.numel() > 0:
            return f"{path}: strides {actual.stride()} != {expected.stride()} (shape {tuple(expected.shape)})"
    rtol, atol = TOLERANCES.get(backend, TOLERANCES["triton"])
    try:
        torch.testing.assert_close(actual.detach(), expected.detach(), rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError as e:
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        return f"{path}: values differ ({'; '.join(lines[:3])})"
    return None


def _short(value: Any, limit: int = 80) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
