"""Gathers as indirect loads (gather, index_select, embedding), and pointwise ops that are another
op in disguise (masked_fill, clamp_min/clamp_max, dropout in eval), plus arange.

An indirect load reads the index tensor's element, turns it into an index symbol of the kernel
(KernelBuilder.indirect_index: masked to the bounds), and loads the source there. The wrapper checks
the indices first (GraphLowering.check_indices), so an index out of range raises as in eager.
"""

from __future__ import annotations

from typing import Any

import sympy
import torch

from pdyn.backends.triton.graph_lowering import GraphLowering, NotLowered
from pdyn.backends.triton.ir import Handler, Index, Pointwise, Scalar, Val, compute_dtype
from pdyn.backends.triton.lowering import (
    check_fill_scalars, composite, fits, lower_clamp, operand, pointwise, register,
)
from pdyn.ops import op_of


def _dim(dim: Any, ndim: int) -> int:
    if not isinstance(dim, int):
        raise NotLowered("dim must be an int")
    return dim % max(ndim, 1)


def gathered(lx: GraphLowering, node: Any, x: Pointwise, index: Pointwise, ranges: list[sympy.Expr],
             where: Any, dim: int, error: type) -> Pointwise:
    """out[i] = x[where(i) with dim `dim` replaced by index[...]]: `where(i)` gives (the index of
    x with a placeholder at `dim`, the index at which `index` is read)."""
    if not isinstance(x, Pointwise) or not isinstance(index, Pointwise):
        raise NotLowered("gather of a non-tensor")
    if index.dtype not in (torch.int64, torch.int32):
        raise NotLowered("index dtype")
    bound = x.ranges[dim]
    lx.check_indices(node, index, bound, None, error)
    dtype = x.dtype

    def fn(h: Handler, idx: Index) -> Val:
        src, at = where(idx)
        i = h.indirect_index(index.fn(h, at), list(idx), bound)
        src = list(src)
        src[dim] = i
        return x.fn(h, src)

    return Pointwise(ranges, dtype, fn, x.reads | index.reads, x.ops + index.ops + 2)


@register("gather")
def lower_gather(lx: GraphLowering, node: Any, x: Any, dim: Any, index: Any, *, sparse_grad: bool = False) -> Pointwise:
    if not isinstance(x, Pointwise) or len(x.ranges) == 0 or len(index.ranges) != len(x.ranges):
        raise NotLowered("gather of these inputs")
    d = _dim(dim, len(x.ranges))
    value = gathered(lx, node, x, index, lx.ranges(node), lambda idx: (idx, idx), d, RuntimeError)
    return lx.maybe_realize(node, value)


@register("index_select")
def lower_index_select(lx: GraphLowering, node: Any, x: Any, dim: Any, index: Any) -> Pointwise:
    if not isinstance(x, Pointwise) or len(x.ranges) == 0 or not isinstance(index, Pointwise) or len(index.ranges) > 1:
        raise NotLowered("index_select of these inputs")
    d = _dim(dim, len(x.ranges))

    def where(idx: Index) -> tuple[Index, Index]:
        return idx, [idx[d]] if index.ranges else []

    error = IndexError if d == 0 else RuntimeError  # NOTE: as torch's CPU kernels raise
    value = gathered(lx, node, x, index, lx.ranges(node), where, d, error)
    return lx.maybe_realize(node, value)


@register("embedding", "torch.embedding")
def lower_embedding(lx: GraphLowering, node: Any, *args: Any, **kwargs: Any) -> Pointwise:
    names = ("input", "weight", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse")
    if op_of(node).name == "torch.embedding":
        names = ("weight", "input", "padding_idx", "scale_grad_by_freq", "sparse")
    a = dict(zip(names, args)) | kwargs
    if a.get("max_norm") is not None:
        raise NotLowered("max_norm renormalizes the weight in place")
    weight, index = a["weight"], a["input"]
    if not isinstance(weight, Pointwise) or len(weight.ranges) != 2 or not isinstance(index, Pointwise):
        raise NotLowered("embedding of these inputs")
    k = len(index.ranges)

    def where(idx: Index) -> tuple[Index, Index]:
        return [sympy.Integer(0), idx[k]], idx[:k]

    value = gathered(lx, node, weight, index, lx.ranges(node), where, 0, IndexError)
    return lx.maybe_realize(node, value)


@register("masked_fill")
def lower_masked_fill(lx: GraphLowering, node: Any, x: Any, mask: Any, value: Any) -> Pointwise:
    if not isinstance(x, Pointwise) or not isinstance(mask, Pointwise) or mask.dtype != torch.bool:
        raise NotLowered("masked_fill of these inputs")
    if isinstance(value, Pointwise) and value.ranges:
        raise NotLowered("masked_fill with a value of dims")
    out = lx.fake(node).dtype
    if isinstance(value, Pointwise) and not fits(value.dtype, out):
        raise NotLowered(f"a {value.dtype} value may overflow {out}: eager raises for one that does")
    check_fill_scalars(out, value)
    dtype = compute_dtype(out)
    # NOTE: operands as `out`: the value converts to x's dtype (rounds to float16) as in eager
    return composite(lx, node, [mask, value, x], out, lambda h, m, v, y: h.op("where", dtype, h.cast(m, torch.bool), v, y))


@register("clamp_min", "clamp_max")
def lower_clamp_bound(lx: GraphLowering, node: Any, x: Any, bound: Any) -> Pointwise:
    if op_of(node).name == "clamp_min":
        return lower_clamp(lx, node, x, min=bound)
    return lower_clamp(lx, node, x, max=bound)


@register("dropout")
def lower_dropout(lx: GraphLowering, node: Any, x: Any, p: Any = 0.5, training: Any = True,
                  inplace: bool = False) -> Any:
    if training is not False or inplace:
        raise NotLowered("dropout in training draws from torch's generator")
    return x  # eager returns the input itself


@register("arange")
def lower_arange(lx: GraphLowering, node: Any, *args: Any, **kwargs: Any) -> Pointwise:
    fake = lx.fake(node)
    if fake.device != lx.device or kwargs.get("requires_grad"):
        raise NotLowered("arange on another device")
    # one positional is `end` unless `end` is a keyword (arange(2, end=n) starts at 2)
    names = ("end",) if len(args) == 1 and "end" not in kwargs else ("start", "end", "step")
    bound = dict(zip(names, args)) | {k: kwargs[k] for k in ("start", "end", "step") if k in kwargs}
    start, step = bound.get("start", 0), bound.get("step", 1)
    if any(isinstance(v, float) or isinstance(v, Scalar) and v.is_float for v in (start, step)):
        raise NotLowered("float bounds: eager computes them in double")
    dtype = fake.dtype
    load_start, _, _ = operand(start, [], torch.int64)
    load_step, _, _ = operand(step, [], torch.int64)

    def fn(h: Handler, idx: Index) -> Val:
        i = h.index_value(idx[0], torch.int64)
        v = h.op("add", torch.int64, load_start(h, idx), h.op("mul", torch.int64, i, load_step(h, idx)))
        return h.cast(v, dtype)

    return Pointwise(lx.ranges(node), dtype, fn, frozenset(), 3)


_ = pointwise
