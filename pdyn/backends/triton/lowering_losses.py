"""logsumexp from two reductions (max, then the sum of shifted exponentials), and cross_entropy and
nll_loss decomposed into it, an indirect load of each row's target class, and a final reduction.
"""

from __future__ import annotations

from typing import Any

import sympy
import torch

from pdyn.backends.triton.graph_lowering import GraphLowering, NotLowered
from pdyn.backends.triton.ir import Handler, Index, Pointwise, Val, compute_dtype
from pdyn.backends.triton.lowering import operand, register, round_to
from pdyn.backends.triton.lowering_reductions import norm_dims, reduce
from pdyn.ops import op_of


def _insert_zeros(dims: tuple[int, ...], ndim: int) -> Any:
    """Index of a keepdim result from the index of the result without the reduced dims."""
    def reindex(idx: Index) -> Index:
        it = iter(idx)
        return [sympy.Integer(0) if d in dims else next(it) for d in range(ndim)]

    return reindex


def logsumexp_of(lx: GraphLowering, x: Pointwise, dims: tuple[int, ...], keepdim: bool,
                 dtype: torch.dtype, sum_in_dtype: bool = False) -> Pointwise:
    """log(sum(exp(x - m))) + m with m the max (0 where it is infinite, as torch shifts).
    `sum_in_dtype`: the sum is rounded to `dtype` before its log, as torch.logsumexp sums into its
    float16 result (inf past 65504 on CPU and CUDA); cross_entropy's log_softmax sums in float32."""
    compute = compute_dtype(dtype)
    ranges = list(x.ranges)
    xs = Pointwise(ranges, dtype, operand(x, ranges, compute)[0], x.reads, x.ops)
    m = reduce(lx, xs, dims, "max", compute, True)  # partials in the compute dtype, as eager's
    load_x, load_m = operand(xs, ranges, compute)[0], operand(m, ranges, compute)[0]

    def safe(h: Handler, v: Val) -> Val:
        inf = h.op("eq", torch.bool, h.op("abs", compute, v), h.constant(float("inf"), compute))
        return h.op("where", compute, inf, h.constant(0.0, compute), v)

    def shifted_exp(h: Handler, idx: Index) -> Val:
        return h.op("exp", compute, h.op("sub", compute, load_x(h, idx), safe(h, load_m(h, idx))))

    e = Pointwise(ranges, dtype, shifted_exp, xs.reads | m.reads, x.ops + 6)
    s = reduce(lx, e, dims, "sum", dtype if sum_in_dtype else compute, keepdim)
    out_ranges = list(s.ranges)
    keep = (lambda idx: idx) if keepdim else _insert_zeros(dims, len(ranges))
    load_stored = operand(s, out_ranges, compute)[0]
    rounds = sum_in_dtype and dtype != compute

    def load_s(h: Handler, idx: Index) -> Val:  # fused, the sum is a float32 value: round it too
        v = load_stored(h, idx)
        return round_to(h, v, dtype) if rounds else v

    def fn(h: Handler, idx: Index) -> Val:
        mv = m.fn(h, keep(idx))
        return h.op("add", compute, h.op("log", compute, load_s(h, idx)), safe(h, h.cast(mv, compute)))

    return Pointwise(out_ranges, dtype, fn, s.reads | m.reads, 8)


@register("logsumexp")
def lower_logsumexp(lx: GraphLowering, node: Any, x: Any, dim: Any, keepdim: bool = False) -> Pointwise:
    if not isinstance(x, Pointwise) or not x.ranges:
        raise NotLowered("logsumexp of a 0-dim tensor")
    dtype = lx.fake(node).dtype
    if not dtype.is_floating_point:
        raise NotLowered("logsumexp result dtype")
    return logsumexp_of(lx, x, norm_dims(dim, len(x.ranges)), keepdim, dtype, sum_in_dtype=True)


def _class_loss_args(node: Any, args: tuple, kwargs: dict, names: tuple[str, ...]) -> dict[str, Any]:
    a = dict(zip(names, args)) | kwargs
    defaults = {"weight": None, "size_average": None, "ignore_index": -100, "reduce": None,
                "reduction": "mean", "label_smoothing": 0.0}
    return defaults | a


@register("cross_entropy", "nll_loss")
def lower_class_loss(lx: GraphLowering, node: Any, *args: Any, **kwargs: Any) -> Pointwise:
    """Class-index targets on (N, C) scores, no class weights or smoothing: per row, the loss is
    lse - x[target] (cross_entropy) or -x[target] (nll_loss), 0 where the target is ignored."""
    cross = op_of(node).name == "cross_entropy"
    names = ("input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction",
             "label_smoothing")
    a = _class_loss_args(node, args, kwargs, names)
    x, t = a["input"], a["target"]
    if a["weight"] is not None or a["size_average"] is not None or a["reduce"] is not None \
            or a["label_smoothing"] != 0.0 or a["reduction"] not in ("none", "mean", "sum"):
        raise NotLowered("class weights, smoothing or legacy reductions")
    if not isinstance(x, Pointwise) or not isinstance(t, Pointwise) or len(x.ranges) != 2 \
            or len(t.ranges) != 1 or t.dtype != torch.int64 or not isinstance(a["ignore_index"], int):
        raise NotLowered("targets other than class indices of (N, C) scores")
    dtype = lx.fake(node).dtype
    compute = compute_dtype(dtype)
    n, c = x.ranges
    ignore = a["ignore_index"]
    lx.check_indices(node, t, c, ignore, IndexError)
    lse = logsumexp_of(lx, x, (1,), False, dtype) if cross else None

    def loss(h: Handler, idx: Index) -> Val:
        row = idx[0]
        target = h.cast(t.fn(h, [row]), torch.int64)
        keep = h.op("ne", torch.bool, target, h.constant(ignore, torch.int64))
        picked = h.cast(x.fn(h, [row, h.indirect_index(target, [row], c)]), compute)
        v = h.op("neg", compute, picked) if lse is None else \
            h.op("sub", compute, h.cast(lse.fn(h, [row]), compute), picked)
        return h.op("where", compute, keep, v, h.constant(0.0, compute))

    reads = x.reads | t.reads | (lse.reads if lse is not None else frozenset())
    per_row = Pointwise([n], dtype, loss, reads, x.ops + t.ops + 6)
    if a["reduction"] == "none":
        return per_row
    if a["reduction"] == "sum":
        return reduce(lx, per_row, (0,), "sum", dtype, False)
    # NOTE: fp32 partials for low precision, as eager; float64 scores sum (and count) in float64
    acc = torch.promote_types(compute, torch.float32)
    total = reduce(lx, per_row, (0,), "sum", acc, False)

    def valid(h: Handler, idx: Index) -> Val:
        target = h.cast(t.fn(h, idx), torch.int64)
        return h.cast(h.op("ne", torch.bool, target, h.constant(ignore, torch.int64)), acc)

    count = reduce(lx, Pointwise([n], acc, valid, t.reads, t.ops + 2), (0,), "sum", acc, False)
    return Pointwise([], dtype, lambda h, idx: h.op("truediv", acc, total.fn(h, []), count.fn(h, [])),
                     total.reads | count.reads, 2)
