"""Reductions (sum, mean, amax, amin, prod, argmax, argmin, var, std, max/min with a dim), the
normalizations built from them (softmax, log_softmax, layer_norm, rms_norm), and the matrix
products, which call torch (extern) and leave bias and activation to a fused epilogue kernel.
"""

from __future__ import annotations

import math
from typing import Any

import sympy
import torch
import torch.nn.functional as F

from pdyn.backends.triton.graph_lowering import GraphLowering, NotLowered
from pdyn.backends.triton.ir import ComputedBuffer, Handler, Index, Pointwise, Reduction, Scalar, Scan, Val, buffer_value, compute_dtype
from pdyn.backends.triton.lowering import operand, register
from pdyn.backends.triton.runtime.torch_calls import scaled_dot_product_attention
from pdyn.ops import op_of


def norm_dims(dim: Any, ndim: int) -> tuple[int, ...]:
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return tuple(range(ndim))
    dims = dim if isinstance(dim, (list, tuple)) else (dim,)
    if any(not isinstance(d, int) for d in dims):
        raise NotLowered("dims must be ints")
    return tuple(sorted({d % max(ndim, 1) for d in dims})) if ndim else ()


def reduce(lx: GraphLowering, x: Pointwise, dims: tuple[int, ...], kind: str,
           dtype: torch.dtype, keepdim: bool, stride: list[sympy.Expr] | None = None) -> Pointwise:
    """Schedule a reduction of `x`; the result is a stored buffer of `dtype` (keepdim or not),
    contiguous unless `stride` (eager's, for a node's result) says otherwise."""
    if not dims:
        raise NotLowered("reduction over no dims of a 0-dim tensor")
    acc = compute_dtype(dtype) if kind not in ("argmax", "argmin") else compute_dtype(x.dtype)
    if acc == torch.bool:
        acc = torch.int32
    red = Reduction(kind, list(x.ranges), dims, x.fn, acc)
    if keepdim:
        size = [sympy.Integer(1) if d in dims else n for d, n in enumerate(x.ranges)]

        def keep_index(xs: Index) -> Index:
            it = iter(xs)
            return [sympy.Integer(0) if d in dims else next(it) for d in range(len(x.ranges))]
    else:
        size, keep_index = red.out_ranges, None  # type: ignore[assignment]  # identity
    return lx.schedule_reduction(red, dtype, x.reads, size, keep_index, stride)


def scale(lx: GraphLowering, ranges: list[sympy.Expr], x: Pointwise, divisor: sympy.Expr,
          dtype: torch.dtype) -> Pointwise:
    """x / divisor (a size), a lazy pointwise over the reduced buffer."""
    compute = compute_dtype(dtype)
    load, reads, ops = operand(x, ranges, compute)

    def fn(h: Handler, idx: Index) -> Val:
        return h.op("truediv", compute, load(h, idx), h.scalar(divisor, compute))

    return Pointwise(ranges, dtype, fn, reads, ops + 1)


def reduced_count(x: Pointwise, dims: tuple[int, ...]) -> sympy.Expr:
    return sympy.Mul(*[x.ranges[d] for d in dims]) if dims else sympy.Integer(1)


@register("sum", "amax", "amin", "prod", "argmax", "argmin", "mean")
def lower_reduction(lx: GraphLowering, node: Any, x: Any, dim: Any = None, keepdim: bool = False,
                    *, dtype: Any = None, **kwargs: Any) -> Pointwise:
    name = op_of(node).name
    kind = {"amax": "max", "amin": "min"}.get(name, name)
    out = lx.fake(node)
    if isinstance(dim, bool):  # prod(x, dim, keepdim) has positional keepdim too
        raise NotLowered("bool dim")
    dims = norm_dims(dim, len(x.ranges))
    if kind in ("argmax", "argmin") and dim is None:
        flat = Pointwise([reduced_count(x, dims)], x.dtype, _flat_fn(x), x.reads, x.ops)
        return reduce(lx, flat, (0,), kind, out.dtype, False, lx.strides(node))
    if kind == "mean":  # the sum stays in the compute dtype: fp16 partials overflow where the mean does not
        total = reduce(lx, x, dims, "sum", compute_dtype(out.dtype), keepdim)
        return scale(lx, lx.ranges(node), total, reduced_count(x, dims), out.dtype)
    if kind == "prod" and dim is not None and not isinstance(dim, int):
        raise NotLowered("prod takes one dim")
    return reduce(lx, x, dims, kind, out.dtype, keepdim, lx.strides(node))


def _flat_fn(x: Pointwise) -> Any:
    from pdyn.backends.triton.lowering_views import reshape_reindex_plain

    reindex = reshape_reindex_plain(list(x.ranges))
    return lambda h, idx: x.fn(h, reindex(idx))


@register("max", "min")
def lower_max_dim(lx: GraphLowering, node: Any, x: Any, dim: Any = None, keepdim: bool = False) -> Any:
    name = op_of(node).name
    out = lx.fake(node)
    if isinstance(dim, Pointwise):
        from pdyn.backends.triton.lowering import lower_max_min

        return lower_max_min(lx, node, x, dim)
    if dim is None:
        return reduce(lx, x, norm_dims(None, len(x.ranges)), name, out.dtype, False, lx.strides(node))
    dims = norm_dims(dim, len(x.ranges))
    values = reduce(lx, x, dims, name, out[0].dtype, keepdim, lx.strides(node, 0))
    indices = reduce(lx, x, dims, "arg" + name, torch.int64, keepdim, lx.strides(node, 1))
    return torch.return_types.max((values, indices)) if name == "max" else torch.return_types.min((values, indices))


def variance(lx: GraphLowering, x: Pointwise, dims: tuple[int, ...], correction: Any,
             keepdim: bool, dtype: torch.dtype, out_ranges: list[sympy.Expr]) -> tuple[Pointwise, Pointwise]:
    """Two passes (mean, then squared deviations); both land in one kernel with two phases.
    Their sums are buffers of the compute dtype (a kernel of their own, the phased form, stores
    them): a float16 sum of squares overflows where the variance does not."""
    n = reduced_count(x, dims)
    compute = compute_dtype(dtype)
    mean_keep = scale(lx, [1 if d in dims else s for d, s in enumerate(x.ranges)],
                      reduce(lx, x, dims, "sum", compute, True), n, dtype)
    load_x, _, _ = operand(x, list(x.ranges), compute)
    load_m, _, _ = operand(mean_keep, list(x.ranges), compute)

    def sq(h: Handler, idx: Index) -> Val:
        d = h.op("sub", compute, load_x(h, idx), load_m(h, idx))
        return h.op("mul", compute, d, d)

    dev = Pointwise(list(x.ranges), dtype, sq, x.reads | mean_keep.reads, x.ops + 3)
    denom = sympy.Max(0, n - correction)
    var = scale(lx, out_ranges, reduce(lx, dev, dims, "sum", compute, keepdim), denom, dtype)
    mean = mean_keep if keepdim else scale(lx, out_ranges, reduce(lx, x, dims, "sum", compute, False), n, dtype)
    return var, mean


def _correction(unbiased: Any, correction: Any) -> Any:
    if correction is not None:
        return correction
    return 0 if unbiased is False else 1


@register("var", "std", "var_mean", "std_mean")
def lower_var(lx: GraphLowering, node: Any, x: Any, dim: Any = None, unbiased: Any = None,
              keepdim: bool = False, *, correction: Any = None) -> Any:
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    name = op_of(node).name
    out = lx.fake(node)
    out0 = out[0] if isinstance(out, tuple) else out
    if not out0.dtype.is_floating_point or isinstance(correction, Scalar):
        raise NotLowered("var of these inputs")
    ranges = lx.ranges(node, 0 if isinstance(out, tuple) else None)
    var, mean = variance(lx, x, norm_dims(dim, len(x.ranges)), _correction(unbiased, correction),
                         keepdim, out0.dtype, ranges)
    if name.startswith("std"):
        load, reads, ops = operand(var, ranges, compute_dtype(out0.dtype))
        var = Pointwise(ranges, out0.dtype, lambda h, i: h.op("sqrt", compute_dtype(out0.dtype), load(h, i)), reads, ops + 1)
    # NOTE: eager's var_mean takes the mean from Welford updates, nan where an inf comes before
    # another element in its reduction order (CPU sequential, CUDA interleaved); sum / n gives inf
    return (var, mean) if name.endswith("_mean") else var


@register("cumsum", "cumprod")
def lower_scan(lx: GraphLowering, node: Any, x: Any, dim: Any, *, dtype: Any = None, **kwargs: Any) -> Pointwise:
    """A scan kernel along `dim` (tl.cumsum / tl.associative_scan), stored with eager's strides."""
    if not isinstance(x, Pointwise) or not x.ranges or not isinstance(dim, int) or kwargs:
        raise NotLowered("scan of a 0-dim tensor")
    out = lx.fake(node)
    acc = compute_dtype(out.dtype)
    if acc == torch.bool:
        raise NotLowered("bool scan")
    load = operand(x, list(x.ranges), acc)[0]
    scan = Scan(op_of(node).name, list(x.ranges), dim % len(x.ranges), load, acc)
    buf = lx.schedule_pointwise(Pointwise(list(x.ranges), out.dtype, load, x.reads), stride=lx.strides(node))
    lx.scheduled[-1] = ComputedBuffer(buf, scan, x.reads)
    return buffer_value(buf)


def _softmax_parts(lx: GraphLowering, x: Pointwise, dim: int, dtype: torch.dtype) -> tuple[Any, ...]:
    compute = compute_dtype(dtype)
    xs = Pointwise(list(x.ranges), dtype, operand(x, list(x.ranges), compute)[0], x.reads, x.ops)
    dims = (dim % len(x.ranges),)
    m = reduce(lx, xs, dims, "max", compute, True)  # partials in the compute dtype, as eager's
    load_x, _, _ = operand(xs, list(x.ranges), compute)
    load_m, _, _ = operand(m, list(x.ranges), compute)

    def shifted(h: Handler, idx: Index) -> Val:
        return h.op("sub", compute, load_x(h, idx), load_m(h, idx))

    def exp(h: Handler, idx: Index) -> Val:
        return h.op("exp", compute, shifted(h, idx))

    e = Pointwise(list(x.ranges), dtype, exp, xs.reads | m.reads, x.ops + 2)
    s = reduce(lx, e, dims, "sum", compute, True)
    load_s, _, _ = operand(s, list(x.ranges), compute)
    return shifted, exp, load_s, e.reads | s.reads


@register("softmax", "log_softmax")
def lower_softmax(lx: GraphLowering, node: Any, x: Any, dim: Any = None, _stacklevel: int = 3,
                  dtype: Any = None, **kwargs: Any) -> Pointwise:
    if dim is None or not isinstance(x, Pointwise) or not x.ranges:
        raise NotLowered("softmax needs a dim")
    out_dtype = lx.fake(node).dtype
    compute = compute_dtype(out_dtype)
    shifted, exp, load_s, reads = _softmax_parts(lx, x, dim, out_dtype)
    log = "log" in op_of(node).name

    def fn(h: Handler, idx: Index) -> Val:
        if log:
            return h.op("sub", compute, shifted(h, idx), h.op("log", compute, load_s(h, idx)))
        return h.op("truediv", compute, exp(h, idx), load_s(h, idx))

    return Pointwise(list(x.ranges), out_dtype, fn, reads, x.ops + 4)


def _norm(lx: GraphLowering, node: Any, x: Pointwise, ndims: int, weight: Any, bias: Any,
          eps: float, rms: bool) -> Pointwise:
    out_dtype = lx.fake(node).dtype
    compute = compute_dtype(out_dtype)
    dims = tuple(range(len(x.ranges) - ndims, len(x.ranges)))
    ranges = list(x.ranges)
    keep = [1 if d in dims else s for d, s in enumerate(ranges)]
    xs = Pointwise(ranges, out_dtype, operand(x, ranges, compute)[0], x.reads, x.ops)
    if rms:
        sq = Pointwise(ranges, out_dtype, lambda h, i: h.op("square", compute, xs.fn(h, i)), xs.reads, xs.ops + 1)
        ms = scale(lx, keep, reduce(lx, sq, dims, "sum", compute, True), reduced_count(x, dims), out_dtype)
        center, spread = xs, ms
    else:
        var, mean = variance(lx, xs, dims, 0, True, out_dtype, keep)
        load_x, load_m = operand(xs, ranges, compute)[0], operand(mean, ranges, compute)[0]
        center = Pointwise(ranges, out_dtype, lambda h, i: h.op("sub", compute, load_x(h, i), load_m(h, i)),
                           xs.reads | mean.reads, xs.ops + 2)
        spread = var
    load_c, load_v = operand(center, ranges, compute)[0], operand(spread, ranges, compute)[0]
    load_w = operand(weight, ranges, compute)[0] if weight is not None else None
    load_b = operand(bias, ranges, compute)[0] if bias is not None else None

    def fn(h: Handler, idx: Index) -> Val:
        v = h.op("add", compute, load_v(h, idx), h.constant(eps, compute))
        y = h.op("mul", compute, load_c(h, idx), h.op("rsqrt", compute, v))
        if load_w is not None:
            y = h.op("mul", compute, y, load_w(h, idx))
        if load_b is not None:
            y = h.op("add", compute, y, load_b(h, idx))
        return y

    reads = center.reads | spread.reads | _reads(weight) | _reads(bias)
    return Pointwise(ranges, out_dtype, fn, reads, center.ops + 6)


def _reads(x: Any) -> frozenset[str]:
    return x.reads if isinstance(x, Pointwise) else frozenset()


@register("layer_norm")
def lower_layer_norm(lx: GraphLowering, node: Any, x: Any, normalized_shape: Any, weight: Any = None,
                     bias: Any = None, eps: float = 1e-5) -> Pointwise:
    shape = normalized_shape if isinstance(normalized_shape, (list, tuple)) else (normalized_shape,)
    return _norm(lx, node, x, len(shape), weight, bias, eps, rms=False)


@register("rms_norm")
def lower_rms_norm(lx: GraphLowering, node: Any, x: Any, normalized_shape: Any, weight: Any = None,
                   eps: Any = None) -> Pointwise:
    shape = normalized_shape if isinstance(normalized_shape, (list, tuple)) else (normalized_shape,)
    if eps is None:
        eps = torch.finfo(lx.fake(node).dtype).eps
    return _norm(lx, node, x, len(shape), weight, None, eps, rms=True)


# -- matrix products: torch computes them, a fused kernel applies what follows ----------------------
@register("mm", "bmm", "matmul")
def lower_mm(lx: GraphLowering, node: Any, a: Any, b: Any) -> Any:
    call = lx.torch_call("extern", node)
    return lx.result_value(node, call, lx.fake(node))


def _extern_then_add(lx: GraphLowering, node: Any, mm_target: Any, mm_args: tuple[Any, ...],
                     bias: Any, beta: Any = 1, alpha: Any = 1) -> Any:
    fake = lx.fake(node)
    call = lx.torch_call("extern", node, target=mm_target, args=mm_args, kwargs={})
    product = lx.result_value(node, call, fake)
    if beta == 0:
        bias = None  # eager ignores the bias: a NaN or inf in it does not propagate (0 * nan)
    if bias is None and alpha == 1:
        return product
    ranges, compute = lx.ranges(node), compute_dtype(fake.dtype)
    load_p, reads_p, _ = operand(product, ranges, compute)
    load_b, reads_b, _ = operand(bias, ranges, compute) if bias is not None else (None, frozenset(), 0)

    def fn(h: Handler, idx: Index) -> Val:
        y = load_p(h, idx)
        if alpha != 1:
            y = h.op("mul", compute, y, h.constant(alpha, compute))
        if load_b is not None:
            b = load_b(h, idx)
            b = b if beta == 1 else h.op("mul", compute, b, h.constant(beta, compute))
            y = h.op("add", compute, y, b)
        return y

    return Pointwise(ranges, fake.dtype, fn, reads_p | reads_b, 3)


# Ops that take a matrix product's result as it is: an extern call or a view of it. A bias added in
# a kernel of its own before them is one more pass over the product; cuBLAS adds it for free.
_TAKES_PRODUCT_AS_IS = frozenset({
    "view", "reshape", "transpose", "permute", "unsqueeze", "squeeze", "flatten", "unflatten", "contiguous",
    "linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "scaled_dot_product_attention", "conv1d", "conv2d"})


def _bias_fuses_later(node: Any) -> bool:
    """Whether the product's bias add may fuse into a kernel after it: some path from `node`
    through views reaches an op that is not an extern call (a pointwise op, a norm, an output)."""
    for user in node.users:
        name = op_of(user).name if user.op in ("call_function", "call_method") else ""
        if name in _READS_NO_DATA:
            continue
        if name not in _TAKES_PRODUCT_AS_IS:
            return True
        if name not in _MATMUL_EXTERNS and _bias_fuses_later(user):
            return True
    return False


_READS_NO_DATA = frozenset({"size", "dim", "stride", "numel", "dtype", "device", "is_contiguous"})
_MATMUL_EXTERNS = frozenset({"linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "scaled_dot_product_attention",
                             "conv1d", "conv2d"})


@register("linear")
def lower_linear(lx: GraphLowering, node: Any, x: Any, weight: Any, bias: Any = None) -> Any:
    x_node, w_node = node.args[0], node.args[1]
    if bias is not None and not _bias_fuses_later(node):
        return lx.result_value(node, lx.torch_call("extern", node), lx.fake(node))  # cuBLAS adds the bias
    return _extern_then_add(lx, node, F.linear, (x_node, w_node), bias)


@register("addmm")
def lower_addmm(lx: GraphLowering, node: Any, bias: Any, a: Any, b: Any, *, beta: Any = 1,
                alpha: Any = 1) -> Any:
    if not all(isinstance(v, (int, float)) for v in (beta, alpha)):
        raise NotLowered("symbolic alpha/beta")
    if alpha == 0:  # eager's CPU BLAS then skips the product (its NaNs vanish), cuBLAS does not
        raise NotLowered("alpha 0")
    a_node, b_node = node.args[1], node.args[2]
    return _extern_then_add(lx, node, torch.mm, (a_node, b_node), bias, beta, alpha)


@register("scaled_dot_product_attention")
def lower_attention(lx: GraphLowering, node: Any, q: Any, k: Any, v: Any, attn_mask: Any = None,
                    dropout_p: Any = 0.0, *args: Any, **kwargs: Any) -> Any:
    """torch's fused attention kernel (extern): the ops producing q, k, v and the mask run as one
    kernel per input before it, what consumes the result fuses into the kernels after it."""
    if kwargs.get("dropout_p", dropout_p) != 0.0:
        raise NotLowered("attention dropout draws from torch's generator")
    call = lx.torch_call("extern", node, target=scaled_dot_product_attention)
    return lx.result_value(node, call, lx.fake(node))


_ = math
