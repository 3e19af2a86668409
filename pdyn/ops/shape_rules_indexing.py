"""Shape rules for ops that index along a dim with a tensor or an int: gather, scatter, index_select,
take_along_dim, index_add/copy/fill, narrow, select; and `x[index] = value` (setitem).

Registered into `pdyn.ops.shape_rules.RULES` on import. The size checks follow aten's
(ScatterGatherChecks.h, TensorAdvancedIndexing.cpp): each one the op makes is a guard here.
"""

from __future__ import annotations

from typing import Any

import sympy
import torch

from pdyn.ops.shape_rules import (
    OpCall,
    ShapeError,
    Sizes,
    SymTensor,
    as_tensor,
    broadcast,
    is_size,
    prod,
    register,
)
from pdyn.ops.shape_rules_views import advanced_index_sizes, index_sizes

INDEX_DTYPES = (torch.int64, torch.int32)


def _size(t: SymTensor, d: int) -> sympy.Expr:
    """A 0-d tensor counts as one element in dim 0 (aten's ensure_nonempty_size)."""
    return sympy.Integer(1) if t.ndim == 0 else sympy.sympify(t.sizes[d])


def _empty(c: OpCall, t: SymTensor) -> bool:
    return bool(t.ndim) and c.is_zero(prod(t.sizes))


def _index_dtype(c: OpCall, index: SymTensor, dtypes: tuple[torch.dtype, ...] = INDEX_DTYPES) -> None:
    if index.dtype not in dtypes:
        raise ShapeError(f"{c.name()}: expected an index of dtype {dtypes}, got {index.dtype}")


def _at_most(c: OpCall, small: SymTensor, big: SymTensor, skip: int | None, what: str) -> None:
    """small.size(i) <= big.size(i) for every dim i but `skip`, with equal dim counts (0-d as 1-d)."""
    ndim = max(small.ndim, 1)
    if ndim != max(big.ndim, 1):
        raise ShapeError(f"{c.name()}: index must have as many dims as {what}")
    for i in range(ndim):
        if i != skip:
            c.require(sympy.Le(_size(small, i), _size(big, i), evaluate=False), f"index no larger than {what}")


@register("gather")
def gather(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim", "index", "sparse_grad", sparse_grad=False)
    x, index = as_tensor(a["input"], "input"), as_tensor(a["index"], "index")
    d = c.dim(a["dim"], x.ndim)
    if not _empty(c, index):
        _index_dtype(c, index)
        _at_most(c, index, x, d, "input")
    return [index.sizes]


def _scatter(c: OpCall, x: SymTensor, dim: Any, index: SymTensor, src: Any) -> list[Sizes]:
    """The checks of scatter, scatter_add, scatter_reduce (and their in-place forms): x keeps its sizes."""
    d = c.dim(dim, x.ndim)
    src = src if isinstance(src, SymTensor) else None
    if not _empty(c, index):
        _index_dtype(c, index)
    if src is not None and src.dtype != x.dtype:
        raise ShapeError(f"{c.name()}: self and src must have the same dtype")
    if not _empty(c, index):
        _at_most(c, index, x, d, "self")
        if src is not None:
            _at_most(c, index, src, None, "src")
    return [x.sizes]


@register("scatter", "scatter_")
def scatter(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim", "index", "src", "value", "reduce", src=None, value=None, reduce=None)
    if a["reduce"] not in (None, "add", "multiply"):
        raise ShapeError("scatter: reduce must be 'add' or 'multiply'")
    src = a["src"] if a["src"] is not None else a["value"]
    if src is None:
        raise ShapeError("scatter needs src or value")
    return _scatter(c, as_tensor(a["input"], "input"), a["dim"], as_tensor(a["index"], "index"), src)


@register("scatter_add", "scatter_add_")
def scatter_add(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim", "index", "src")
    return _scatter(c, as_tensor(a["input"], "input"), a["dim"], as_tensor(a["index"], "index"),
                    as_tensor(a["src"], "src"))


@register("scatter_reduce", "scatter_reduce_")
def scatter_reduce(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim", "index", "src", "reduce", "include_self", include_self=True)
    if a["reduce"] not in ("sum", "prod", "mean", "amax", "amin"):
        raise ShapeError("scatter_reduce: reduce must be sum, prod, mean, amax or amin")
    return _scatter(c, as_tensor(a["input"], "input"), a["dim"], as_tensor(a["index"], "index"),
                    as_tensor(a["src"], "src"))


def _vector(c: OpCall, index: Any) -> sympy.Expr:
    """The number of entries of an index that must be a vector (or a 0-d tensor)."""
    index = as_tensor(index, "index")
    if index.ndim > 1:
        raise ShapeError(f"{c.name()}: index is supposed to be a vector")
    _index_dtype(c, index)
    return prod(index.sizes)


@register("isin")
def isin(c: OpCall) -> list[Sizes] | None:
    """One bool per element of `elements` (a number gives a 0-d tensor)."""
    a = c.bind("elements", "test_elements", "assume_unique", "invert", assume_unique=False, invert=False)
    elements = a["elements"]
    return [elements.sizes if isinstance(elements, SymTensor) else ()]


@register("bucketize")
def bucketize(c: OpCall) -> list[Sizes] | None:
    """One bucket index per element of `input`, against 1-d `boundaries`."""
    a = c.bind("input", "boundaries", "out_int32", "right", out_int32=False, right=False)
    boundaries = as_tensor(a["boundaries"], "boundaries")
    if boundaries.ndim != 1:
        raise ShapeError(f"{c.name()}: boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    x = a["input"]
    return [x.sizes if isinstance(x, SymTensor) else ()]


@register("index_select")
def index_select(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim", "index")
    x = as_tensor(a["input"], "input")
    d = c.dim(a["dim"], x.ndim)
    n = _vector(c, a["index"])
    if x.ndim == 0:
        c.require(sympy.Eq(n, 1, evaluate=False), "an index into a 0-d tensor has one entry")
        return [()]
    return [x.sizes[:d] + (n,) + x.sizes[d + 1 :]]


@register("index_add", "index_add_", "index_copy", "index_copy_")
def index_add(c: OpCall) -> list[Sizes] | None:
    """source matches self but in `dim`, where it has one slice per index entry."""
    a = c.bind("input", "dim", "index", "source", "alpha", alpha=1)
    x, source = as_tensor(a["input"], "input"), as_tensor(a["source"], "source")
    d = c.dim(a["dim"], x.ndim)
    n = _vector(c, a["index"])
    if source.dtype != x.dtype:
        raise ShapeError(f"{c.name()}: self and source must have the same dtype")
    if max(x.ndim, 1) != max(source.ndim, 1):
        raise ShapeError(f"{c.name()}: source and self must have the same number of dims")
    c.equal(n, _size(source, d), "one source slice per index entry")
    for i in range(max(x.ndim, 1)):
        if i != d:
            c.equal(_size(source, i), _size(x, i), "source and self slices have the same sizes")
    return [x.sizes]


@register("index_fill", "index_fill_")
def index_fill(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim", "index", "value")
    x = as_tensor(a["input"], "input")
    c.dim(a["dim"], x.ndim)
    _vector(c, a["index"])
    if isinstance(a["value"], SymTensor) and a["value"].ndim:
        raise ShapeError(f"{c.name()}: value must be a 0-d tensor")
    return [x.sizes]


@register("take_along_dim")
def take_along_dim(c: OpCall) -> list[Sizes] | None:
    """dim=None gathers from the flattened input; else both broadcast to each other but in `dim`."""
    a = c.bind("input", "indices", "dim", dim=None)
    x, index = as_tensor(a["input"], "input"), as_tensor(a["indices"], "indices")
    _index_dtype(c, index, (torch.int64,))
    if a["dim"] is None:
        n = prod(index.sizes)
        if not c.is_zero(n):
            c.require(sympy.Gt(prod(x.sizes), 0, evaluate=False), "gather from a non-empty input")
        return [(n,)]
    if x.ndim != index.ndim:
        raise ShapeError("take_along_dim: input and indices need the same number of dims")
    if x.ndim == 0:
        raise ShapeError("take_along_dim: a 0-d tensor has no dim to take along")
    d = c.dim(a["dim"], x.ndim)
    out = broadcast(c, x.sizes[:d] + (index.sizes[d],) + x.sizes[d + 1 :], index.sizes)
    broadcast(c, index.sizes[:d] + (x.sizes[d],) + index.sizes[d + 1 :], x.sizes)
    if not c.is_zero(prod(out)) and c.is_zero(x.sizes[d]):
        raise ShapeError("take_along_dim: index into an empty dim")
    return [out]


# -- int indices ---------------------------------------------------------------------------------


@register("narrow")
def narrow(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim", "start", "length")
    x = as_tensor(a["input"], "input")
    if x.ndim == 0:
        raise ShapeError("narrow() cannot be applied to a 0-dim tensor")
    if not is_size(a["start"]) or not is_size(a["length"]):
        return None  # a 0-d tensor start: its value is data
    d = c.dim(a["dim"], x.ndim)
    size, start, length = x.sizes[d], sympy.sympify(a["start"]), sympy.sympify(a["length"])
    c.require(sympy.Ge(length, 0, evaluate=False), "length must be non-negative")
    c.require(sympy.Ge(start, -size, evaluate=False), "start in range")
    c.require(sympy.Le(start, size, evaluate=False), "start in range")
    if c.check(sympy.Lt(start, 0, evaluate=False), "the sign of narrow's start"):
        start = start + size
    c.require(sympy.Le(start + length, size, evaluate=False), "start + length within the dim")
    return [x.sizes[:d] + (length,) + x.sizes[d + 1 :]]


@register("select")
def select(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim", "index")
    x = as_tensor(a["input"], "input")
    if x.ndim == 0:
        raise ShapeError("select() cannot be applied to a 0-dim tensor")
    if not is_size(a["index"]):
        return None
    d = c.dim(a["dim"], x.ndim)
    index = sympy.sympify(a["index"])
    c.require(sympy.Ge(index, -x.sizes[d], evaluate=False), "index in range")
    c.require(sympy.Lt(index, x.sizes[d], evaluate=False), "index in range")
    return [x.sizes[:d] + x.sizes[d + 1 :]]


@register("setitem")
def setitem(c: OpCall) -> list[Sizes] | None:
    """`x[index] = value` makes no tensor: the indexed region's sizes are checked as getitem checks
    them (ints in range, guarded), and a tensor value must broadcast to the region (torch drops the
    value's leading size-1 dims first). No output sizes: x keeps its own."""
    if len(c.args) != 3 or not isinstance(c.args[0], SymTensor):
        return None
    x, index, value = c.args
    region = index_sizes(c, x, index)
    if region is None:
        region = advanced_index_sizes(c, x, index)
    if region is None:
        return None   # a mask's region depends on the data
    if isinstance(value, SymTensor):
        sizes = list(value.sizes)
        while len(sizes) > len(region) and c.is_one(sizes[0]):
            sizes.pop(0)
        if len(sizes) > len(region):
            return None   # torch raises, or not, by its own checks: specialized
        for got, want in zip(broadcast(c, region, tuple(sizes)), region):
            if got != want and (c.env.unbacked_in(got) or c.env.unbacked_in(want)
                                or c.env.hint(got) != c.env.hint(want)):
                return None
            c.equal(got, want, "the value broadcasts to the region")   # a size-1 value dim stays 1
    elif not (is_size(value) or isinstance(value, (bool, float, complex))):
        return None
    return []
