"""Shape rules for ops that order or scan values along a dim: sort, argsort, topk, cummax, cummin,
roll, diff, and the order statistics median, nanmedian, mode, kthvalue.

Registered into `pdyn.ops.shape_rules.RULES` on import. Each keeps the input's sizes, except topk,
which keeps `k` entries of its dim, diff, which drops `n`, and the order statistics, which reduce
their dim to (values, indices) (median of a whole tensor: one value).
"""

from __future__ import annotations

from typing import Any

import sympy

from pdyn.ops.shape_rules import OpCall, ShapeError, Sizes, SymTensor, as_tensor, is_size, known, prod, register
from pdyn.ops.shape_rules_reductions import reduce_sizes


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


@register("median", "nanmedian", "mode", "kthvalue")
def order_statistic(c: OpCall) -> list[Sizes] | None:
    """`median(x)`: one value of a non-empty x; with a dim (mode: -1 by default) (values, indices)
    of the reduced sizes; kthvalue's k in [1, the dim's size]."""
    kth = c.name() == "kthvalue"
    a = c.bind("input", "k", "dim", "keepdim", dim=-1, keepdim=False) if kth else \
        c.bind("input", "dim", "keepdim", dim=-1 if c.name() == "mode" else None, keepdim=False)
    x = as_tensor(a["input"], "input")
    if a["dim"] is None:
        if c.is_zero(prod(x.sizes)):
            raise ShapeError(f"{c.name()} of an empty tensor")
        return [()]
    if isinstance(a["dim"], (list, tuple)) or not isinstance(a["keepdim"], bool):
        raise ShapeError(f"{c.name()}: one int dim and a bool keepdim")
    out = reduce_sizes(c, x, a["dim"], a["keepdim"], True)
    if kth:
        if not is_size(a["k"]):
            raise ShapeError("kthvalue: k must be an int")
        length = x.sizes[c.dim(a["dim"], x.ndim)] if x.ndim else sympy.Integer(1)
        c.require(sympy.Ge(sympy.sympify(a["k"]), 1, evaluate=False), "k in range for the dim")
        c.require(sympy.Le(sympy.sympify(a["k"]), length, evaluate=False), "k in range for the dim")
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


@register("diff")
def diff(c: OpCall) -> list[Sizes] | None:
    """prepend and append join `dim` (their other sizes equal the input's); each order drops one entry."""
    a = c.bind("input", "n", "dim", "prepend", "append", n=1, dim=-1, prepend=None, append=None)
    x = as_tensor(a["input"], "input")
    order = c.value(a["n"], "the order of diff")
    if x.ndim == 0:
        raise ShapeError("diff expects a tensor of at least 1 dim")
    if order == 0 and a["prepend"] is None and a["append"] is None:
        return [x.sizes]  # returned before the dim is read
    d = c.dim(a["dim"], x.ndim)
    if order < 0:
        raise ShapeError("diff: order must be non-negative")
    length = x.sizes[d]
    for extra in (a["prepend"], a["append"]):
        if extra is None:
            continue
        if not isinstance(extra, SymTensor) or extra.ndim != x.ndim:
            raise ShapeError("diff expects prepend or append to be the same dimension as input")
        for i in range(x.ndim):
            if i != d:
                c.equal(extra.sizes[i], x.sizes[i], "prepend and append match the input but in dim")
        length = length + extra.sizes[d]
    if order == 0:
        return [x.sizes]  # prepend and append are checked, not joined
    out = length - order
    if not known(c.env, sympy.Ge(out, 0, evaluate=False)):
        out = sympy.Max(out, 0)
    return [x.sizes[:d] + (out,) + x.sizes[d + 1 :]]


@register("flip", "fliplr", "flipud")
def flip(c: OpCall) -> list[Sizes] | None:
    """Sizes unchanged; the dims must exist (fliplr: 2 of them, flipud: 1)."""
    if c.name() == "flip":
        a = c.bind("input", "dims")
        x = as_tensor(a["input"], "input")
        dims = [c.dim(d, x.ndim) for d in _ints(a["dims"])]
        if len(set(dims)) != len(dims):
            raise ShapeError("flip: dims must be distinct")
        return [x.sizes]
    x = as_tensor(c.bind("input")["input"], "input")
    if x.ndim < (2 if c.name() == "fliplr" else 1):
        raise ShapeError(f"{c.name()}: input has too few dims")
    return [x.sizes]


@register("rot90")
def rot90(c: OpCall) -> list[Sizes] | None:
    """An odd number of quarter turns swaps the two dims' sizes."""
    a = c.bind("input", "k", "dims", k=1, dims=(0, 1))
    x, dims = as_tensor(a["input"], "input"), _ints(a["dims"])
    if len(dims) != 2 or x.ndim < 2 or not isinstance(a["k"], int):
        raise ShapeError("rot90: needs 2 distinct dims of a tensor of 2 or more dims and an int k")
    d0, d1 = c.dim(dims[0], x.ndim), c.dim(dims[1], x.ndim)
    if d0 == d1:
        raise ShapeError("rot90: dims must be distinct")
    out = list(x.sizes)
    if a["k"] % 2:
        out[d0], out[d1] = out[d1], out[d0]
    return [tuple(out)]
