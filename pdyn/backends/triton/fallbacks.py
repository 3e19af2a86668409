"""The op table's rows this backend leaves to torch, each with the reason: a node of such an op
runs as a torch call between kernels. Every declared row has a lowering (lowering*.py) or a reason
here; tests/ops/test_op_table.py checks. Rows that write an argument, that tracing refuses, or whose
output size depends on data are covered by their column.
"""

from __future__ import annotations

from pdyn.ops import OPS, Op, row

FALLBACKS: dict[Op, str] = {}
LIBRARY = "a library kernel (torch's)"  # by design, not for want of a lowering


def fallback(*names: str, why: str) -> None:
    for name in names:
        op = row(name)
        assert op not in FALLBACKS, f"second fallback for {name}"
        FALLBACKS[op] = why


def reason(op: Op) -> str | None:
    """Why torch runs `op` on this backend, where a column or a declaration says."""
    if op.mutates is not None:
        return "it writes an argument: run in order on live tensors (writes.py), or as its out-of-place op"
    if op.refused is not None:
        return "tracing refuses it"
    if op.data_dependent is not None and op.data_dependent.startswith("output size: "):
        return op.data_dependent
    return FALLBACKS.get(op)



fallback(*"""negative positive log10 tan asin acos atan sinh cosh arcsin arccos arctan relu6 mish softplus elu
selu celu leaky_relu hardtanh hardswish hardsigmoid logsigmoid softsign tanhshrink erfc erfinv sgn round trunc
frac isinf isfinite nan_to_num sinc angle conj real rsub fmod float_power atan2 arctan2 hypot greater less
greater_equal less_equal not_equal bitwise_left_shift bitwise_right_shift copysign xlogy lerp addcmul addcdiv
heaviside nextafter __rsub__ __rtruediv__ __rfloordiv__ __rmod__ __rpow__
__rlshift__ __rrshift__ acosh asinh atanh arccosh arcsinh arctanh absolute fix lgamma digamma i0 polygamma
mvlgamma logit deg2rad rad2deg signbit isneginf isposinf isreal hardshrink softshrink logaddexp logaddexp2 gcd
lcm ldexp igamma igammac isclose""".split(), why="pointwise op without a template yet")
fallback("alpha_dropout", "feature_alpha_dropout", "rand", "randn", "randint", "rand_like",
         "randn_like", "randint_like", why="draws from torch's random generator")
fallback("short", "char", "byte", "cfloat", why="a cast to a dtype the kernels do not compute in")
fallback("cpu", "cuda", why="a device move")
fallback("nansum", "nanmean", "any", "all", "count_nonzero", "norm", "logcumsumexp", why="reduction without a lowering yet")
fallback("dot", "vdot", "mv", "baddbmm", "addmv", "outer", "ger", "__rmatmul__", "conv1d", "conv2d", "conv3d",
         "_native_multi_head_attention", "_transformer_encoder_layer_fwd", "cdist",
         why=LIBRARY)
fallback("flip", "fliplr", "flipud", "rot90", why="a copy along reversed dims without a lowering yet")
fallback("median", "nanmedian", "mode", "kthvalue", why="an order statistic: a selection without a lowering yet")
fallback("pixel_shuffle", "pixel_unshuffle", why="a permuting copy without a lowering yet")
fallback("cosine_similarity", "pairwise_distance", why="nn op without a lowering yet")
fallback("hstack", "vstack", "row_stack", "dstack", "column_stack", why="a join without a lowering yet (cat has one)")
fallback("broadcast_tensors", why="views of its inputs, several of them: torch makes them")
fallback("empty", "empty_like", "new_empty", why="uninitialized memory: nothing to compute")
fallback("eye", "linspace", "logspace", "tril", "triu", why="index-valued factory without a lowering yet")
fallback("repeat", "swapdims", "movedim", "moveaxis", "split", "split_with_sizes", "chunk", "unbind", "stack",
         "getattr", "pad", why="view or gather without a lowering yet")
fallback("group_norm", "batch_norm", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
         "adaptive_avg_pool2d", "adaptive_max_pool2d", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
         "binary_cross_entropy_with_logits",
         why="nn op without a lowering yet")
fallback("scatter", "scatter_add", "scatter_reduce", "take_along_dim", "index_add",
         "index_copy", "index_fill", "roll", "tile", why="indexing along a dim without a lowering yet")
fallback("sort", "argsort", "topk", "cummax", "cummin", "diff", why="sorting or scan without a lowering yet")
fallback("isin", "bucketize", why="a search over a second tensor without a lowering yet")
fallback("lstm", "gru", "rnn_tanh", "rnn_relu", why="a recurrent layer: torch's kernels (cuDNN) run it")
fallback("pad_sequence", why="a copy of sequences into one padded tensor without a lowering yet")
fallback("tensor", "as_tensor", "new_tensor", why="a tensor made from Python data: nothing to compute")
fallback("meshgrid", why="views of its inputs without a lowering yet")
fallback("einsum", why="a library kernel (torch's): a contraction torch plans")
fallback("interpolate", why="resampling without a lowering yet")
fallback("repeat_interleave", why="output size depends on data when the repeats are a tensor")
fallback(*(n for n in OPS if n.startswith(("builtins.", "math."))),
         why="Python arithmetic on sizes: an int result is a size expression the wrapper computes")
fallback("runtime_assert", why="a runtime assert on data-dependent sizes: torch checks it between kernels")

# pdyn: the shape rule admits only inputs that own their storage, which the fallback hands torch
fallback("as_strided", why="a view by explicit strides: torch makes it")
fallback("unfold", "one_hot", "histc", why="a window view, a class scatter or a histogram without a lowering yet")
fallback("numpy_elementwise", "numpy_call", why="a NumPy call: torch._numpy's Python runs it on the tensors")
