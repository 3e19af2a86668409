"""Shape rules for tensors built from Python data and grids: torch.tensor, as_tensor, new_tensor, meshgrid.

Registered into `pdyn.ops.shape_rules.RULES` on import. A nested list's sizes are its lengths: the
values in it (symbolic sizes too, `torch.tensor([n, 2])`) do not change them.
"""

from __future__ import annotations

from typing import Any

import sympy

from pdyn.ops.shape_rules import OpCall, ShapeError, Sizes, SymTensor, as_tensor, is_size, register
from pdyn.shapes import size_arith


def data_sizes(c: OpCall, data: Any) -> Sizes | None:
    """Sizes of a tensor made from `data`: nested lists of numbers or tensors; None for other data."""
    if isinstance(data, SymTensor):
        return data.sizes
    if is_size(data) or isinstance(data, (bool, float, complex)):
        return ()
    if not isinstance(data, (list, tuple)):
        return None  # a numpy array, a storage, an object with __array__: no rule
    if not data:
        return (sympy.Integer(0),)
    if any(isinstance(item, SymTensor) and item.ndim for item in data):
        return None  # a one-element tensor in a list is a scalar there; others raise
    inner = [data_sizes(c, item) for item in data]
    if any(sizes is None for sizes in inner):
        return None
    first = inner[0]
    for sizes in inner[1:]:
        if len(sizes) != len(first) or not all(size_arith.same(a, b) for a, b in zip(sizes, first)):
            return None  # ragged: torch reads the first item at each level, then may raise
    return (sympy.Integer(len(data)), *first)


@register("tensor", "as_tensor")
def tensor(c: OpCall) -> list[Sizes] | None:
    sizes = data_sizes(c, c.bind("data", "dtype", "device")["data"])
    return None if sizes is None else [sizes]


@register("new_tensor")
def new_tensor(c: OpCall) -> list[Sizes] | None:
    a = c.bind("self", "data")
    as_tensor(a["self"], "self")
    sizes = data_sizes(c, a["data"])
    return None if sizes is None else [sizes]


@register("meshgrid")
def meshgrid(c: OpCall) -> list[Sizes] | None:
    """Every output has one dim per input (its length); `xy` indexing swaps the first two."""
    indexing = c.kwargs.get("indexing") or "ij"
    tensors = list(c.args)
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = list(tensors[0])
    if not tensors or indexing not in ("ij", "xy") or set(c.kwargs) - {"indexing"}:
        raise ShapeError("meshgrid: expects tensors and indexing 'ij' or 'xy'")
    lengths: list[sympy.Expr] = []
    for t in tensors:
        t = as_tensor(t, "a meshgrid input")
        if t.ndim > 1:
            raise ShapeError("meshgrid: expects 0-d or 1-d tensors")
        lengths.append(t.sizes[0] if t.ndim else sympy.Integer(1))
    if len({t.dtype for t in tensors}) > 1:
        raise ShapeError("meshgrid: expects all tensors to have the same dtype")
    if indexing == "xy" and len(lengths) >= 2:
        lengths[0], lengths[1] = lengths[1], lengths[0]
    return [tuple(lengths)] * len(tensors)

