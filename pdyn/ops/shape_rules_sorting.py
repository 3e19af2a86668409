"""Shape rules for ops that order or scan values along a dim: sort, argsort, topk, cummax, cummin, roll.

Registered into `pdyn.ops.shape_rules.RULES` on import. Each keeps the input's sizes, except topk,
which keeps `k` entries of its dim.
"""

from __future__ import annotations

from typing import Any

import sympy

from pdyn.ops.shape_rules import OpCall, ShapeError, Sizes, as_tensor, is_size, prod, register


@register("sort")
def sort(c: OpCall) -> list[Sizes] | None:
    """(values, indices); `stable` is positional in the functional form and keyword-only in aten's."""
    a = c.bind("input", "dim", "descending", "stable", dim=-1)
    x = as_tensor(a["input"], "input")
    c.dim(a["dim"], x.ndim)
    return [x.sizes, x.sizes]


@register("argsort")
def argsort(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim", "descending", "stable", dim=-1)
    x = as_tensor(a["input"], "input")
    c.dim(a["dim"], x.ndim)
    return [x.sizes]


@register("cummax", "cummin")
def cummax(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim")
    x = as_tensor(a["input"], "input")
    if not c.is_zero(prod(x.sizes)):  # an empty input returns before the dim is read
        c.dim(a["dim"], x.ndim)
    return [x.sizes, x.sizes]


@register("topk")
def topk(c: OpCall) -> list[Sizes] | None:
    """(values, indices) with `k` entries in `dim`; 0 <= k <= the dim's size (1 for a 0-d input)."""
    a = c.bind("input", "k", "dim", "largest", "sorted", dim=-1)
    x = as_tensor(a["input"], "input")
    if not is_size(a["k"]):
        raise ShapeError("topk: k must be an int")
    k = sympy.sympify(a["k"])
    d = c.dim(a["dim"], x.ndim)
    length = x.sizes[d] if x.ndim else sympy.Integer(1)
    c.require(sympy.Ge(k, 0, evaluate=False), "k in range for the dim")
    c.require(sympy.Le(k, length, evaluate=False), "k in range for the dim")
    out = x.sizes[:d] + (k,) + x.sizes[d + 1 :] if x.ndim else ()
    return [out, out]


def _ints(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


@register("roll")
def roll(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "shifts", "dims", dims=None)
    x = as_tensor(a["input"], "input")
    shifts = _ints(a["shifts"])
    dims = [] if a["dims"] is None else _ints(a["dims"])
    if not dims and len(shifts) != 1:
        raise ShapeError("roll: shifts without dims must be one int (it rolls the flattened tensor)")
    if dims and len(dims) != len(shifts):
        raise ShapeError("roll: shifts and dims must align")
    if dims and x.ndim == 0:
        raise ShapeError("roll: a 0-d tensor has no dims to roll along")
    for d in dims:
        c.dim(d, x.ndim)
    return [x.sizes]
