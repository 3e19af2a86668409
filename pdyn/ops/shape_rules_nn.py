"""Shape rules for nn ops: softmax and scans, norms, embedding, convolution, pooling, pad, interpolate,
attention, losses.

Registered into `pdyn.ops.shape_rules.RULES` on import. Convolution and pooling sizes follow torch's
formula floor((H + 2p - d*(k-1) - 1) / s) + 1, with a guard that the result is positive.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import sympy
import torch

from pdyn.ops.shape_rules import (
    ONE,
    OpCall,
    ShapeError,
    Sizes,
    as_int,
    as_tensor,
    broadcast,
    is_size,
    prod,
    register,
)
from pdyn.ops.shape_rules_reductions import expand_to
from pdyn.shapes import size_arith
from pdyn.shapes.shape_env import CeilDiv, FloorDiv

log = logging.getLogger(__name__)



@register("softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp", "cumsum_", "cumprod_")
def along_dim(c: OpCall) -> list[Sizes] | None:
    """Same sizes, with `dim` checked (softmax's dim=None picks one itself)."""
    a = c.bind("input", "dim", "_stacklevel", "dtype", dim=None)
    x = as_tensor(a["input"], "input")
    if a["dim"] is not None and not isinstance(a["dim"], torch.dtype):
        c.dim(a["dim"], x.ndim)
    return [x.sizes]


@register("tril", "triu", "tril_", "triu_")
def tril(c: OpCall) -> list[Sizes] | None:
    x = as_tensor(c.bind("input", "diagonal", diagonal=0)["input"], "input")
    if x.ndim < 2:
        raise ShapeError(f"{c.name()}: input needs at least 2 dims")
    return [x.sizes]


# -- norms ---------------------------------------------------------------------------------------


def _param(c: OpCall, value: Any, sizes: Sizes, what: str) -> None:
    """An optional weight/bias/statistic whose sizes must equal `sizes`."""
    if value is None:
        return
    t = as_tensor(value, what)
    if t.ndim != len(sizes):
        raise ShapeError(f"{c.name()}: {what} must have {len(sizes)} dims")
    for a, b in zip(t.sizes, sizes):
        c.equal(a, b, f"{what} sizes")


def _normalized_shape(c: OpCall, x: Any, shape: Any) -> Sizes:
    x = as_tensor(x, "input")
    shape = [shape] if is_size(shape) else list(shape)
    if not shape or len(shape) > x.ndim:
        raise ShapeError(f"{c.name()}: normalized_shape {shape} does not fit {x.ndim} dims")
    return tuple(c.equal(a, b, "normalized_shape") for a, b in zip(x.sizes[x.ndim - len(shape) :], shape))


@register("layer_norm")
def layer_norm(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "normalized_shape", "weight", "bias", "eps", "cudnn_enable", weight=None, bias=None)
    shape = _normalized_shape(c, a["input"], a["normalized_shape"])
    _param(c, a["weight"], shape, "weight")
    _param(c, a["bias"], shape, "bias")
    return [a["input"].sizes]


@register("rms_norm")
def rms_norm(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "normalized_shape", "weight", "eps", weight=None)
    shape = _normalized_shape(c, a["input"], a["normalized_shape"])
    _param(c, a["weight"], shape, "weight")
    return [a["input"].sizes]


@register("group_norm")
def group_norm(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "num_groups", "weight", "bias", "eps", "cudnn_enabled", weight=None, bias=None)
    x = as_tensor(a["input"], "input")
    groups = c.value(a["num_groups"], "num_groups")
    if x.ndim < 2 or groups <= 0:
        raise ShapeError("group_norm: input needs a channel dim and num_groups > 0")
    channels = x.sizes[1]
    if not size_arith.divides(channels, groups):
        cond = sympy.Eq(sympy.Mod(channels, groups, evaluate=False), 0, evaluate=False)
        c.require(cond, f"channels divisible by {groups} groups")
    per_group = prod((x.sizes[0], size_arith.exact_quotient(channels, groups), *x.sizes[2:]))
    c.require(sympy.Ne(per_group, 1, evaluate=False), "more than 1 value per group")  # F's own check
    _param(c, a["weight"], (channels,), "weight")
    _param(c, a["bias"], (channels,), "bias")
    return [x.sizes]


@register("batch_norm")
def batch_norm(c: OpCall) -> list[Sizes] | None:
    names = ("input", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps")
    a = c.bind(*names, weight=None, bias=None, training=False)
    x = as_tensor(a["input"], "input")
    if x.ndim < 2:
        raise ShapeError("batch_norm: input needs a channel dim")
    for name in ("running_mean", "running_var", "weight", "bias"):
        _param(c, a[name], (x.sizes[1],), name)
    if a["training"]:
        per_channel = prod(x.sizes[:1] + x.sizes[2:])
        c.require(sympy.Ne(per_channel, 1, evaluate=False), "more than 1 value per channel when training")
    return [x.sizes]


# -- embedding -----------------------------------------------------------------------------------


@register("embedding")
def embedding(c: OpCall) -> list[Sizes] | None:
    names = ("input", "weight", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse")
    a = c.bind(*names)
    return _embed(c, as_tensor(a["input"], "input").sizes, as_tensor(a["weight"], "weight").sizes)


@register("torch.embedding")
def torch_embedding(c: OpCall) -> list[Sizes] | None:
    a = c.bind("weight", "indices", "padding_idx", "scale_grad_by_freq", "sparse")
    return _embed(c, as_tensor(a["indices"], "indices").sizes, as_tensor(a["weight"], "weight").sizes)


def _embed(c: OpCall, indices: Sizes, weight: Sizes) -> list[Sizes]:
    if len(weight) != 2:
        raise ShapeError("embedding: weight must be 2-D")
    return [indices + (weight[1],)]


# -- convolution and pooling ---------------------------------------------------------------------


def _tuple(c: OpCall, value: Any, n: int, what: str) -> list[Any]:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(values) == 1:
        values = values * n
    if len(values) != n or not all(is_size(v) for v in values):
        raise ShapeError(f"{c.name()}: {what} must be an int or {n} ints, got {value!r}")
    return values


def window_size(c: OpCall, size: Any, k: Any, s: Any, p: Any, d: Any, ceil_mode: bool = False) -> sympy.Expr:
    """Output length of a sliding window: floor((size + 2p - d*(k-1) - 1) / s) + 1, must be >= 1."""
    span = sympy.sympify(size) + 2 * p - d * (k - 1) - 1
    out = (CeilDiv(span, s) if ceil_mode else FloorDiv(span, s)) + 1
    if ceil_mode and c.check(sympy.Ge((out - 1) * s, sympy.sympify(size) + p, evaluate=False), "ceil_mode"):
        out = out - 1  # the last window may not start in the right padding
    c.require(sympy.Ge(out, 1, evaluate=False), "the output size must be positive")
    return out


def _spatial_input(c: OpCall, x: Any, n: int) -> tuple[Sizes, Sizes]:
    """(batch and channel sizes, spatial sizes) of an input with or without a batch dim."""
    x = as_tensor(x, "input")
    if x.ndim not in (n + 1, n + 2):
        raise ShapeError(f"{c.name()}: expected {n + 1}-D or {n + 2}-D input, got {x.ndim}-D")
    return x.sizes[:-n], x.sizes[-n:]


def _conv(c: OpCall, n: int) -> list[Sizes] | None:
    a = c.bind("input", "weight", "bias", "stride", "padding", "dilation", "groups",
               bias=None, stride=1, padding=0, dilation=1, groups=1)
    lead, spatial = _spatial_input(c, a["input"], n)
    w = as_tensor(a["weight"], "weight").sizes
    groups = c.value(a["groups"], "conv groups")
    if len(w) != n + 2 or groups <= 0:
        raise ShapeError(f"{c.name()}: weight must be {n + 2}-D and groups positive")
    c.equal(lead[-1], w[1] * groups, "input channels == weight.size(1) * groups")
    if not size_arith.divides(w[0], groups):
        c.require(sympy.Eq(sympy.Mod(w[0], groups, evaluate=False), 0, evaluate=False), "out channels % groups")
    if a["bias"] is not None:
        _param(c, a["bias"], (w[0],), "bias")
    stride, dilation = _tuple(c, a["stride"], n, "stride"), _tuple(c, a["dilation"], n, "dilation")
    if a["padding"] in ("same", "valid"):
        if a["padding"] == "same" and any(as_int(s) != 1 for s in stride):
            raise ShapeError("padding='same' needs stride 1")
        out = spatial if a["padding"] == "same" else None
        padding = [0] * n
    else:
        out, padding = None, _tuple(c, a["padding"], n, "padding")
    if out is None:
        out = tuple(window_size(c, *v) for v in zip(spatial, w[2:], stride, padding, dilation))
    return [lead[:-1] + (w[0],) + tuple(out)]


register("conv1d")(lambda c: _conv(c, 1))
register("conv2d")(lambda c: _conv(c, 2))
register("conv3d")(lambda c: _conv(c, 3))


def _pool(c: OpCall, n: int, kind: str) -> list[Sizes] | None:
    names = ["input", "kernel_size", "stride", "padding"]
    names += ["dilation", "ceil_mode", "return_indices"] if kind == "max" else ["ceil_mode", "count_include_pad"]
    a = c.bind(*names, "divisor_override", stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)
    lead, spatial = _spatial_input(c, a["input"], n)
    kernel = _tuple(c, a["kernel_size"], n, "kernel_size")
    stride = kernel if a["stride"] in (None, [], ()) else _tuple(c, a["stride"], n, "stride")
    padding, dilation = _tuple(c, a["padding"], n, "padding"), _tuple(c, a["dilation"], n, "dilation")
    for k, s, p, d in zip(kernel, stride, padding, dilation):
        for value, low in ((k, 1), (s, 1), (d, 1), (p, 0)):
            c.require(sympy.Ge(value, low, evaluate=False), "a positive window and padding")
        c.require(sympy.Le(2 * p, k, evaluate=False), "pad at most half the kernel")
    for size in spatial:
        c.require(sympy.Gt(size, 0, evaluate=False), "non-empty spatial dims")
    windows = zip(spatial, kernel, stride, padding, dilation)
    out = lead + tuple(window_size(c, *w, bool(a["ceil_mode"])) for w in windows)
    return [out, out] if a["return_indices"] else [out]


register("max_pool1d")(lambda c: _pool(c, 1, "max"))
register("max_pool2d")(lambda c: _pool(c, 2, "max"))
register("avg_pool1d")(lambda c: _pool(c, 1, "avg"))
register("avg_pool2d")(lambda c: _pool(c, 2, "avg"))


def _adaptive(c: OpCall, n: int) -> list[Sizes] | None:
    a = c.bind("input", "output_size", "return_indices", return_indices=False)
    lead, spatial = _spatial_input(c, a["input"], n)
    for size in lead[1:] + spatial:
        c.require(sympy.Gt(size, 0, evaluate=False), "non-empty non-batch dims")
    want = list(a["output_size"]) if isinstance(a["output_size"], (list, tuple)) else [a["output_size"]] * n
    if len(want) != n:
        raise ShapeError(f"{c.name()}: output_size needs {n} values")
    out = lead + tuple(s if w is None else sympy.sympify(w) for s, w in zip(spatial, want))
    return [out, out] if a["return_indices"] else [out]


register("adaptive_avg_pool1d")(lambda c: _adaptive(c, 1))
register("adaptive_avg_pool2d")(lambda c: _adaptive(c, 2))
register("adaptive_max_pool2d")(lambda c: _adaptive(c, 2))


@register("pad")
def pad(c: OpCall) -> list[Sizes] | None:
    """Pairs (left, right) from the last dim; constant pads cut too, the other modes read the edges."""
    a = c.bind("input", "pad", "mode", "value", mode="constant", value=None)
    x = as_tensor(a["input"], "input")
    pads = list(a["pad"])
    if len(pads) % 2 or len(pads) // 2 > x.ndim or not all(is_size(p) for p in pads):
        raise ShapeError("pad: needs pairs of ints, at most two per dim")
    pairs = [(sympy.sympify(pads[2 * i]), sympy.sympify(pads[2 * i + 1])) for i in range(len(pads) // 2)]
    if a["mode"] in EDGE_PADS:
        return [_edge_pad(c, x.sizes, pairs, a["mode"], a["value"])]
    if a["mode"] != "constant":
        return None
    sizes = list(x.sizes)
    for i, pair in enumerate(pairs):
        d = x.ndim - 1 - i
        cut = sum((p for p in pair if c.check(sympy.Lt(p, 0, evaluate=False), "a pad's sign")), sympy.Integer(0))
        c.require(sympy.Ge(sizes[d] + cut, 0, evaluate=False), "negative pads cut at most the whole dim")
        sizes[d] = sizes[d] + pair[0] + pair[1]
    return [tuple(sizes)]


EDGE_PADS = ("reflect", "replicate", "circular")


def _edge_pad(c: OpCall, sizes: Sizes, pairs: list[tuple[sympy.Expr, sympy.Expr]], mode: str, value: Any) -> Sizes:
    """reflect/replicate/circular: 1 to 3 padded dims of an input with one or two leading dims."""
    n = len(pairs)
    if value not in (None, 0):
        raise ShapeError(f"pad: mode {mode!r} takes no value")
    if n not in (1, 2, 3) or len(sizes) not in (n + 1, n + 2):
        raise ShapeError(f"pad: mode {mode!r} pads 1 to 3 dims of an input with 1 or 2 more dims")
    if mode != "circular":  # a batch dim may be empty, no other dim
        for size in sizes[len(sizes) - n - 1 :]:
            c.require(sympy.Gt(size, 0, evaluate=False), "non-empty dims apart from the batch")
    out = list(sizes)
    for i, (left, right) in enumerate(pairs):
        d = len(sizes) - 1 - i
        if mode == "reflect":
            for p in (left, right):
                c.require(sympy.Lt(p, sizes[d], evaluate=False), "a reflect pad shorter than the dim")
        if mode == "circular":
            for p in (left, right):
                c.require(sympy.Le(p, sizes[d], evaluate=False), "a circular pad wraps around at most once")
        out[d] = sizes[d] + left + right
        c.require(sympy.Ge(out[d], 0, evaluate=False), "a padded dim of size >= 0")
    padded = out[len(sizes) - n :]
    if mode != "circular" and not any(c.check(sympy.Ge(s, 1, evaluate=False), "an empty padded dim") for s in padded):
        raise ShapeError(f"pad: mode {mode!r} leaves every padded dim empty")
    return tuple(out)


# -- interpolate ---------------------------------------------------------------------------------

# mode: the input dims it takes
INTERPOLATE_MODES = {"nearest": (3, 4, 5), "nearest-exact": (3, 4, 5), "area": (3, 4, 5), "linear": (3,),
                     "bilinear": (4,), "bicubic": (4,), "trilinear": (5,)}


def _scaled(c: OpCall, size: sympy.Expr, scale: Any) -> sympy.Expr | None:
    """floor(float(size) * scale) as an exact expression, or None where float rounding could differ."""
    if is_size(scale):
        return size * sympy.sympify(scale)
    if not isinstance(scale, float) or not math.isfinite(scale):
        return None
    exact = sympy.Rational(scale)
    if abs(exact.p).bit_length() > 20:  # float(size) * scale is exact for sizes below 2**33
        return None
    return FloorDiv(size * exact.p, exact.q)


@register("interpolate")
def interpolate(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor", "antialias",
               size=None, scale_factor=None, mode="nearest", align_corners=None, antialias=False)
    x, mode = as_tensor(a["input"], "input"), a["mode"]
    if mode not in INTERPOLATE_MODES or x.ndim not in INTERPOLATE_MODES[mode]:
        raise ShapeError(f"interpolate: mode {mode!r} does not take a {x.ndim}-D input")
    if mode in ("nearest", "nearest-exact", "area") and a["align_corners"] is not None:
        raise ShapeError("interpolate: align_corners only goes with the linear modes")
    if a["antialias"] and not (mode in ("bilinear", "bicubic") and x.ndim == 4):
        raise ShapeError("interpolate: antialias only goes with bilinear and bicubic on 4-D inputs")
    n = x.ndim - 2
    if (a["size"] is None) == (a["scale_factor"] is None):
        raise ShapeError("interpolate: give either size or scale_factor")
    if a["size"] is not None:
        out = list(a["size"]) if isinstance(a["size"], (list, tuple, torch.Size)) else [a["size"]] * n
        if len(out) != n or not all(is_size(s) for s in out):
            raise ShapeError(f"interpolate: size needs {n} ints")
        spatial = [sympy.sympify(s) for s in out]
    else:
        scales = list(a["scale_factor"]) if isinstance(a["scale_factor"], (list, tuple)) else [a["scale_factor"]] * n
        if len(scales) != n:
            raise ShapeError(f"interpolate: scale_factor needs {n} values")
        scaled = [_scaled(c, size, scale) for size, scale in zip(x.sizes[2:], scales)]
        if any(s is None for s in scaled):
            return None
        spatial = [s for s in scaled if s is not None]
    if mode == "area":  # adaptive pooling: empty dims take paths of their own (a mean of nothing)
        if any(c.is_zero(size) for size in list(x.sizes[1:]) + spatial):
            return None
    for size in list(x.sizes[1:]) + spatial:
        c.require(sympy.Gt(size, 0, evaluate=False), "input (but the batch) and output sizes greater than 0")
    return [x.sizes[:2] + tuple(spatial)]


# -- attention and losses ------------------------------------------------------------------------


@register("scaled_dot_product_attention")
def attention(c: OpCall) -> list[Sizes] | None:
    """(..., L, E) x (..., S, E) x (..., S, Ev) -> (..., L, Ev); with enable_gqa, query heads are a
    multiple of key/value heads; a mask broadcasts to the scores (..., L, S)."""
    a = c.bind("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa",
               attn_mask=None, is_causal=False, enable_gqa=False)
    q, k, v = (as_tensor(a[name], name).sizes for name in ("query", "key", "value"))
    if min(len(q), len(k), len(v)) < 2:
        raise ShapeError("scaled_dot_product_attention: q, k, v need 2 dims")
    if a["is_causal"] and a["attn_mask"] is not None:
        raise ShapeError("scaled_dot_product_attention: attn_mask with is_causal=True")
    c.equal(q[-1], k[-1], "query and key embedding sizes")
    c.equal(k[-2], v[-2], "key and value sequence lengths")
    if a["enable_gqa"] and min(len(q), len(k), len(v)) < 3:
        raise ShapeError("scaled_dot_product_attention: enable_gqa needs a heads dim")
    if a["enable_gqa"]:
        heads = c.equal(k[-3], v[-3], "key and value heads")
        if not size_arith.divides(q[-3], heads):
            c.require(sympy.Eq(sympy.Mod(q[-3], heads, evaluate=False), 0, evaluate=False),
                      "query heads a multiple of key/value heads")
        batch = broadcast(c, q[:-3], k[:-3], v[:-3]) + (q[-3],)
    else:
        batch = broadcast(c, q[:-2], k[:-2], v[:-2])
    if a["attn_mask"] is not None:
        expand_to(c, as_tensor(a["attn_mask"], "attn_mask").sizes, batch + (q[-2], k[-2]), "attn_mask")
    return [batch + (q[-2], v[-1])]


@register("_native_multi_head_attention")
def native_multi_head_attention(c: OpCall) -> list[Sizes] | None:
    """MultiheadAttention's fused kernel: (B, L, E) queries, (B, S, E) keys -> the output (B, L, E')
    of the output projection (E', E), and the attention weights, (B, L, S) averaged over heads or
    (B, heads, L, S); without weights the second result is None."""
    a = c.bind("query", "key", "value", "embed_dim", "num_head", "qkv_weight", "qkv_bias", "proj_weight",
               "proj_bias", "mask", "need_weights", "average_attn_weights", "mask_type", mask=None,
               need_weights=True, average_attn_weights=True, mask_type=None)
    q, k = as_tensor(a["query"], "query").sizes, as_tensor(a["key"], "key").sizes
    proj = as_tensor(a["proj_weight"], "proj_weight").sizes
    if len(q) != 3 or len(k) != 3 or len(proj) != 2:
        raise ShapeError("_native_multi_head_attention: 3-D query and key, 2-D proj_weight")
    out = (q[0], q[1], proj[0])
    if not a["need_weights"]:
        return [out]
    heads = () if a["average_attn_weights"] else (sympy.sympify(a["num_head"]),)
    return [out, (q[0], *heads, q[1], k[1])]


@register("_transformer_encoder_layer_fwd")
def transformer_encoder_layer_fwd(c: OpCall) -> list[Sizes] | None:
    """TransformerEncoderLayer's fused kernel keeps the (B, L, E) shape of its input."""
    return [as_tensor(c.args[0] if c.args else c.kwargs.get("src"), "src").sizes]


@register("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")
def pointwise_loss(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "target", "size_average", "reduce", "reduction", reduction="mean")
    out = broadcast(c, as_tensor(a["input"], "input").sizes, as_tensor(a["target"], "target").sizes)
    return [out] if a["reduction"] == "none" else [()]


@register("binary_cross_entropy_with_logits")
def bce_with_logits(c: OpCall) -> list[Sizes] | None:
    """torch.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction): the
    operands broadcast; reduction 0 (none) keeps the broadcast sizes, 1 and 2 give a scalar."""
    a = c.bind("input", "target", "weight", "pos_weight", "reduction", weight=None, pos_weight=None, reduction=1)
    if a["reduction"] not in (0, 1, 2):
        return None
    shapes = [as_tensor(a[k], k).sizes for k in ("input", "target", "weight", "pos_weight") if a[k] is not None]
    out = broadcast(c, *shapes)
    return [out] if a["reduction"] == 0 else [()]


@register("cross_entropy", "nll_loss")
def class_loss(c: OpCall) -> list[Sizes] | None:
    """input (C), (N, C) or (N, C, d1, ...): class indices (int64) are the input less its class dim,
    class probabilities (a float target, cross_entropy only) are the input's sizes; weight is (C).
    The result is the target's sizes with reduction="none", else a scalar."""
    names = ("input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction")
    if c.name() == "cross_entropy":
        names += ("label_smoothing",)
    a = c.bind(*names, weight=None, size_average=None, reduce=None, reduction="mean")
    x, t = as_tensor(a["input"], "input"), as_tensor(a["target"], "target")
    if a["size_average"] is not None or a["reduce"] is not None or not x.dtype.is_floating_point or x.ndim == 0 \
            or a["reduction"] not in ("none", "mean", "sum"):
        return None  # legacy reductions, and torch's own errors: its meta kernel decides
    class_dim = 0 if x.ndim == 1 else 1
    if c.is_zero(x.sizes[class_dim]):
        return None  # no class: torch's kernels raise, or not, by path; its meta kernel decides
    rest = x.sizes[:class_dim] + x.sizes[class_dim + 1:]
    if c.name() == "cross_entropy" and t.dtype.is_floating_point:
        if t.ndim != x.ndim:
            raise ShapeError(f"{c.name()}: class probabilities need the input's {x.ndim} dims, got {t.ndim}")
        for i, (xs, ts) in enumerate(zip(x.sizes, t.sizes)):
            c.equal(xs, ts, f"input and target size {i}")
    elif t.dtype != torch.int64 or t.ndim != len(rest):
        return None
    else:
        rest = tuple(c.equal(xs, ts, f"input and target size {i}") for i, (xs, ts) in enumerate(zip(rest, t.sizes)))
    if a["weight"] is not None:
        w = as_tensor(a["weight"], "weight")
        if w.ndim != 1:
            return None
        c.equal(w.sizes[0], x.sizes[class_dim], "weight size and classes")
    return [rest] if a["reduction"] == "none" else [()]


@register("pixel_shuffle", "pixel_unshuffle")
def pixel_shuffle(c: OpCall) -> list[Sizes] | None:
    """(..., C * r * r, H, W) <-> (..., C, H * r, W * r); the factor is a value, C (or H, W) a multiple."""
    a = c.bind("input", "upscale_factor" if c.name() == "pixel_shuffle" else "downscale_factor")
    x = as_tensor(a["input"], "input")
    r = c.value(next(v for k, v in a.items() if k != "input"), "the pixel shuffle factor")
    if x.ndim < 3 or r <= 0:
        raise ShapeError(f"{c.name()}: an input of 3 or more dims and a positive factor")
    *batch, ch, h, w = x.sizes
    if c.name() == "pixel_shuffle":
        c.require(sympy.Eq(sympy.Mod(ch, r * r, evaluate=False), 0, evaluate=False), "channels a multiple of r*r")
        return [(*batch, size_arith.exact_quotient(ch, r * r), h * r, w * r)]
    for size in (h, w):
        c.require(sympy.Eq(sympy.Mod(size, r, evaluate=False), 0, evaluate=False), "height and width multiples of r")
    return [(*batch, ch * r * r, size_arith.exact_quotient(h, r), size_arith.exact_quotient(w, r))]


@register("cosine_similarity", "pairwise_distance")
def pairwise_reduction(c: OpCall) -> list[Sizes] | None:
    """The operands broadcast, then `dim` (cosine_similarity) or the last dim (pairwise_distance,
    kept with keepdim) is reduced."""
    if c.name() == "cosine_similarity":
        a = c.bind("x1", "x2", "dim", "eps", dim=1)
        keepdim, dim = False, a["dim"]
    else:
        a = c.bind("x1", "x2", "p", "eps", "keepdim", keepdim=False)
        keepdim, dim = a["keepdim"], -1
    x1, x2 = as_tensor(a["x1"], "x1"), as_tensor(a["x2"], "x2")
    if not isinstance(keepdim, bool) or min(x1.ndim, x2.ndim) == 0:
        return None
    out = broadcast(c, x1.sizes, x2.sizes)
    d = c.dim(dim, len(out))
    return [out[:d] + ((sympy.Integer(1),) if keepdim else ()) + out[d + 1:]]
