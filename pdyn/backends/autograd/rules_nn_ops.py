"""Derivative rules of the nn ops transformers train with: layer_norm and gelu (closed forms the
Triton backend fuses into reductions and pointwise kernels, the statistics recomputed from the
saved input), cross_entropy over class indices (softmax minus the one-hot target), embedding
(torch's dense embedding backward: a scatter-add, which needs the ids only, not the weight).
Other variants (weights per class, label smoothing, max_norm) take torch's backward (extern)."""

from __future__ import annotations

import math
from typing import Any

import sympy
import torch
import torch.fx

from pdyn.backends.autograd.builder import BackwardBuilder, sizes_of
from pdyn.backends.autograd.rules import derivative, extern_rule, is_tensor, pointwise, sum_to

LOW_PRECISION = (torch.float16, torch.bfloat16)


def _mean(bx: BackwardBuilder, t: Any, dims: list[int]) -> torch.fx.Node:
    s = sizes_of(t)
    kept = tuple(sympy.Integer(1) if d - len(s) in dims else n for d, n in enumerate(s))
    return bx.call(torch.mean, t, dims, keepdim=True, sizes=kept)


def _wide(bx: BackwardBuilder, t: Any) -> Any:
    """Low-precision values in float32, as eager's kernels compute norms."""
    return bx.cast(t, torch.float32) if t.meta["example_value"].dtype in LOW_PRECISION else t


@derivative("layer_norm", params="input normalized_shape weight bias eps", weight=None, bias=None, eps=1e-5)
def layer_norm(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    x, w, b = a["input"], a["weight"], a["bias"]
    dims = list(range(-len(a["normalized_shape"]), 0))
    xs = _wide(bx, bx.primal(x))
    g = _wide(bx, g)
    centered = pointwise(bx, torch.sub, xs, _mean(bx, xs, dims))
    var = _mean(bx, pointwise(bx, torch.mul, centered, centered), dims)
    rstd = pointwise(bx, torch.rsqrt, pointwise(bx, torch.add, var, bx.primal(a["eps"])))
    xhat = pointwise(bx, torch.mul, centered, rstd)
    if is_tensor(w) and bx.partitioner.needs_grad(w):
        bx.accumulate(w, sum_to(bx, pointwise(bx, torch.mul, g, xhat), sizes_of(w)))
    if is_tensor(b) and bx.partitioner.needs_grad(b):
        bx.accumulate(b, sum_to(bx, g, sizes_of(b)))
    if not bx.partitioner.needs_grad(x):
        return
    gx = pointwise(bx, torch.mul, g, bx.primal(w)) if is_tensor(w) else g
    inner = pointwise(bx, torch.sub, pointwise(bx, torch.sub, gx, _mean(bx, gx, dims)),
                      pointwise(bx, torch.mul, xhat, _mean(bx, pointwise(bx, torch.mul, gx, xhat), dims)))
    bx.accumulate(x, pointwise(bx, torch.mul, inner, rstd))


@derivative("gelu", params="input approximate", approximate="none")
def gelu(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    if a["approximate"] != "none":
        extern_rule(bx, node, g)
        return
    x = bx.primal(a["input"])
    cdf = pointwise(bx, torch.mul, pointwise(bx, torch.add, pointwise(bx, torch.erf, pointwise(
        bx, torch.mul, x, math.sqrt(0.5))), 1.0), 0.5)
    pdf = pointwise(bx, torch.mul, pointwise(bx, torch.exp, pointwise(bx, torch.mul, pointwise(
        bx, torch.mul, x, x), -0.5)), 1.0 / math.sqrt(2.0 * math.pi))
    local = pointwise(bx, torch.add, cdf, pointwise(bx, torch.mul, x, pdf))
    bx.accumulate(a["input"], pointwise(bx, torch.mul, g, local))


def embedding_backward(grad: torch.Tensor, ids: torch.Tensor, rows: int, padding_idx: int,
                       by_frequency: bool) -> torch.Tensor:
    """The weight's gradient of `embedding(ids, weight)`: torch's scatter-add over the ids."""
    return torch.ops.aten.embedding_dense_backward(grad, ids, rows, padding_idx, by_frequency)


@derivative("embedding", params="input weight padding_idx max_norm norm_type scale_grad_by_freq sparse",
            padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False)
def embedding(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    w = a["weight"]
    if a["max_norm"] is not None or a["sparse"] or not isinstance(a["padding_idx"], (int, type(None))):
        extern_rule(bx, node, g)
        return
    rows = sizes_of(w)[0]
    padding = -1 if a["padding_idx"] is None else a["padding_idx"]
    if a["padding_idx"] is not None and padding < 0:  # counted from the end: rows must be known
        if not rows.is_Integer:
            extern_rule(bx, node, g)
            return
        padding += int(rows)
    bx.accumulate(w, bx.call(embedding_backward, g, bx.primal(a["input"]), bx.size(rows), padding,
                             bool(a["scale_grad_by_freq"]), sizes=sizes_of(w)))


@derivative("cross_entropy", params="input target weight size_average ignore_index reduce reduction label_smoothing",
            weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0)
def cross_entropy(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    x, target = a["input"], a["target"]
    plain = a["weight"] is None and a["size_average"] is None and a["reduce"] is None and a["label_smoothing"] == 0.0
    if not plain or len(sizes_of(x)) != 2 or target.meta["example_value"].is_floating_point() \
            or a["reduction"] not in ("mean", "sum") or not isinstance(a["ignore_index"], (int, torch.fx.Node)):
        extern_rule(bx, node, g)
        return
    rows, classes = sizes_of(x)
    fake = x.meta["example_value"]
    probs = bx.call(torch.softmax, bx.primal(x), -1, sizes=(rows, classes))
    column = bx.call(torch.unsqueeze, bx.primal(target), 1, sizes=(rows, sympy.Integer(1)))
    ids = bx.call(torch.arange, bx.size(classes), device=fake.device, sizes=(classes,))
    hot = pointwise(bx, torch.eq, column, ids)
    keep = pointwise(bx, torch.ne, column, bx.primal(a["ignore_index"]))
    step = pointwise(bx, torch.where, keep, pointwise(bx, torch.sub, probs, _float(bx, hot, fake.dtype)), 0.0)
    scaled = pointwise(bx, torch.mul, step, g)
    if a["reduction"] == "mean":
        count = bx.call(torch.sum, keep, sizes=())
        scaled = pointwise(bx, torch.div, scaled, count)
    bx.accumulate(x, scaled)


def _float(bx: BackwardBuilder, t: torch.fx.Node, dtype: torch.dtype) -> torch.fx.Node:
    return bx.call(torch.Tensor.to, t, dtype, sizes=sizes_of(t))
