"""Closed-form output sizes of a few op families, written from torch's documentation and apart from
the shape rules, for translation validation to check the rules against (shapes/validation.py).

`definitions(name, args, kwargs, result)` returns (what, defined, rule's) pairs of sizes that must be
equal for every size the trace's assumptions allow. Ops without a definition here return none.
"""

from __future__ import annotations

import math
from typing import Any

import sympy

from pdyn.ops.catalogue import BINARY
from pdyn.ops.shape_rules import SymTensor

Check = tuple[str, sympy.Basic, sympy.Basic]
_CONV = {"conv1d": 1, "conv2d": 2, "conv3d": 3}
_POOL = {"max_pool1d": 1, "max_pool2d": 2, "avg_pool1d": 1, "avg_pool2d": 2}


def _bind(names: list[str], args: tuple, kwargs: dict, **defaults: Any) -> dict[str, Any]:
    bound = dict(defaults)
    bound.update(zip(names, args))
    bound.update({k: v for k, v in kwargs.items() if k in names})
    return bound


def _n(value: Any, n: int) -> list[Any]:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    return values * n if len(values) == 1 else values


def _window(size: Any, k: Any, s: Any, p: Any, d: Any, ceil_mode: bool) -> sympy.Basic:
    """torch.nn.Conv/MaxPool docs: floor((L + 2p - d(k-1) - 1) / s + 1), ceil with ceil_mode, and
    with ceil_mode the last window must start inside the input or the left padding."""
    frac = sympy.Mul(sympy.sympify(size) + 2 * p - d * (k - 1) - 1, sympy.Rational(1, 1) / s)
    out = (sympy.ceiling(frac, evaluate=False) if ceil_mode else sympy.floor(frac, evaluate=False)) + 1
    if not ceil_mode:
        return out
    return sympy.Piecewise((out - 1, sympy.Ge((out - 1) * s, sympy.sympify(size) + p)), (out, True))


def _spatial(name: str, args: tuple, kwargs: dict, result: list[tuple], n: int, conv: bool) -> list[Check]:
    if conv:
        a = _bind(["input", "weight", "bias", "stride", "padding", "dilation", "groups"], args, kwargs,
                  stride=1, padding=0, dilation=1)
        if isinstance(a["padding"], str) or not isinstance(a.get("weight"), SymTensor):
            return []
        kernel = list(a["weight"].sizes[2:])
        ceil_mode = False
    else:
        a = _bind(["input", "kernel_size", "stride", "padding", "dilation" if name.startswith("max") else "ceil_mode",
                   "ceil_mode" if name.startswith("max") else "count_include_pad"], args, kwargs,
                  stride=None, padding=0, dilation=1, ceil_mode=False)
        kernel = _n(a["kernel_size"], n)
        ceil_mode = bool(a["ceil_mode"])
    stride = kernel if a["stride"] in (None, [], ()) else _n(a["stride"], n)
    padding, dilation = _n(a["padding"], n), _n(a["dilation"], n)
    spatial = a["input"].sizes[-n:]
    checks = []
    for i, w in enumerate(zip(spatial, kernel, stride, padding, dilation)):
        if not all(isinstance(v, (int, sympy.Basic)) for v in w):
            return []
        checks.append((f"{name} output size of spatial dim {i}", _window(*w, ceil_mode), result[0][-n + i]))
    return checks


def _broadcast(name: str, tensors: list[SymTensor], result: list[tuple]) -> list[Check]:
    """torch's broadcasting: right-aligned, a size 1 takes the other's size."""
    ndim = max(t.ndim for t in tensors)
    checks = []
    for i in range(ndim):
        size: sympy.Basic | None = None
        for t in tensors:
            j = i - (ndim - t.ndim)
            if j < 0:
                continue
            dim = sympy.sympify(t.sizes[j])
            size = dim if size is None else sympy.Piecewise((dim, sympy.Eq(size, 1)), (size, True))
        checks.append((f"{name} broadcast size of dim {i}", size, result[0][i]))
    return checks


def definitions(name: str, args: tuple, kwargs: dict, result: list[tuple]) -> list[Check]:
    if not result:
        return []
    x = args[0] if args else kwargs.get("input")
    if name in _CONV and isinstance(x, SymTensor):
        return _spatial(name, args, kwargs, result, _CONV[name], conv=True)
    if name in _POOL and isinstance(x, SymTensor) and not kwargs.get("divisor_override"):
        return _spatial(name, args, kwargs, result, _POOL[name], conv=False)
    if name in ("view", "reshape", "view_as", "reshape_as") and isinstance(x, SymTensor):
        return [(f"{name} keeps the number of elements", math.prod(x.sizes, start=sympy.Integer(1)),
                 math.prod(result[0], start=sympy.Integer(1)))]
    if name in ("cat", "concat", "concatenate"):
        tensors = args[0] if args else kwargs.get("tensors")
        dim = kwargs.get("dim", args[1] if len(args) > 1 else 0)
        kept = [t for t in tensors if isinstance(t, SymTensor) and t.sizes != (0,)] if isinstance(tensors, (list, tuple)) \
            else []
        if not kept or not isinstance(dim, int) or len(kept) != len(tensors):
            return []
        return [(f"{name} size along dim {dim}", sum((t.sizes[dim] for t in kept), sympy.Integer(0)), result[0][dim])]
    if name in BINARY and name not in ("lerp", "addcmul", "addcdiv", "clamp", "clip", "masked_fill"):
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, SymTensor)]
        if tensors and len(result) == 1 and len(result[0]) == max(t.ndim for t in tensors):
            return _broadcast(name, tensors, result)
    return []
