"""The declared rows of the op table, family by family, with their spellings and columns.

A new op goes here first (its row and spellings); its shape rule then registers on the row by name
(pdyn/shape_rules*.py), and the Triton backend either lowers it or says why torch runs it
(backends/triton/lowering*.py, backends/triton/fallbacks.py). Names are torch's (aten's);
Python's operators spell the row of the torch op they call on tensors (`operator.truediv` is
`div`, `operator.ixor` is `bitwise_xor_`). Each family's `namespaces` are where its functions live.
"""

from __future__ import annotations

import builtins
import math
import operator

import torch
import torch.nn.functional as F

from pdyn.ops.table import Refusal, declare, declare_all
from pdyn.shapes.runtime_asserts import runtime_assert

TORCH, TENSOR = (torch,), (torch.Tensor,)

# -- pointwise: every tensor operand broadcasts ------------------------------------------------------
UNARY = """abs neg negative positive exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin
acos atan sinh cosh tanh arcsin arccos arctan sigmoid relu relu6 gelu silu mish softplus elu selu celu
leaky_relu hardtanh hardswish hardsigmoid logsigmoid softsign tanhshrink erf erfc erfinv reciprocal
sign sgn floor ceil round trunc frac isnan isinf isfinite logical_not bitwise_not square nan_to_num
dropout alpha_dropout feature_alpha_dropout sinc angle conj real acosh asinh atanh arccosh arcsinh
arctanh absolute fix lgamma digamma i0 polygamma mvlgamma logit deg2rad rad2deg signbit isneginf isposinf
isreal hardshrink softshrink""".split()
BINARY = """add sub subtract rsub mul multiply div divide true_divide floor_divide remainder fmod pow
float_power atan2 arctan2 hypot maximum minimum fmax fmin eq ne lt le gt ge greater less greater_equal
less_equal not_equal logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor
bitwise_left_shift bitwise_right_shift copysign xlogy lerp addcmul addcdiv clamp clip
clamp_min clamp_max masked_fill heaviside nextafter logaddexp logaddexp2 gcd lcm ldexp igamma igammac isclose""".split()
POINTWISE_IN_PLACE = [n + "_" for n in UNARY + BINARY]

declare_all(UNARY + BINARY)
declare("abs", spellings=[builtins.abs])
declare_all(POINTWISE_IN_PLACE, namespaces=(torch, torch.Tensor))

# Python's operators on tensors: operator.<key> and Tensor.__<key>__ are torch's <row>; `a <op>= b` is
# the row's in-place form; a reflected `__r<key>__` is the row itself where the op commutes.
PYTHON_OPERATORS = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
    "mod": "remainder", "pow": "pow", "and_": "bitwise_and", "or_": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift", "matmul": "matmul",
    "lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "eq": "eq", "ne": "ne",
    "neg": "neg", "pos": "positive", "invert": "bitwise_not", "abs": "abs",
}
IN_PLACE_OPERATORS = "add sub mul truediv floordiv mod pow and_ or_ xor lshift rshift matmul".split()
COMMUTATIVE = {"add", "mul", "and_", "or_", "xor"}
# reflected operators of the others: their own rows (`2 - x` is `x.__rsub__(2)`)
REFLECTED = ["__r" + n.strip("_") + "__" for n in IN_PLACE_OPERATORS if n not in COMMUTATIVE]



def _tensor_functions(dunders: list[str]) -> list[object]:
    return [getattr(torch.Tensor, d) for d in dunders if hasattr(torch.Tensor, d)]


for _key, _row in PYTHON_OPERATORS.items():
    _dunder = _key.strip("_")
    _dunders = [f"__{_dunder}__"] + ([f"__r{_dunder}__"] if _key in COMMUTATIVE else [])
    declare(_row, spellings=[getattr(operator, _key), *_dunders, *_tensor_functions(_dunders)])
    if _key in IN_PLACE_OPERATORS:
        _dunders = [f"__i{_dunder}__"]
        declare(_row + "_", spellings=[getattr(operator, "i" + _dunder), *_dunders, *_tensor_functions(_dunders)])
declare_all(REFLECTED, namespaces=TENSOR)

# -- conversions and copies: the sizes of the tensor itself -------------------------------------------
CONVERSIONS = """to type type_as float half double bfloat16 int long short char byte bool cpu cuda
contiguous clone detach detach_ requires_grad_ cfloat""".split()
declare_all(CONVERSIONS, namespaces=TENSOR)
declare("clone", spellings=[torch.clone])
declare("detach", spellings=[torch.detach])
declare("alias")
declare("where", data_dependent="output size, when given only a condition (where(cond) is nonzero)")

# -- reductions, matmul, factories --------------------------------------------------------------------
REDUCTIONS = """sum mean nansum nanmean prod any all count_nonzero amax amin logsumexp argmax argmin max min
var std var_mean std_mean norm""".split()
MATMUL = "matmul mm bmm dot vdot mv addmm baddbmm addmv outer ger".split()
FACTORIES = "empty zeros ones rand randn full randint eye linspace logspace arange".split()
LIKE = "zeros_like ones_like empty_like rand_like randn_like full_like randint_like".split()
NEW = "new_zeros new_ones new_empty new_full".split()

declare_all(REDUCTIONS + MATMUL)
declare("__rmatmul__", namespaces=())
declare("linear", namespaces=(F,))
declare_all(FACTORIES + LIKE, namespaces=TORCH)
declare_all(NEW, namespaces=TENSOR)

# -- views, indexing, joins -----------------------------------------------------------------------------
declare_all(["view", "reshape"], namespaces=(torch, torch.Tensor))
declare("as_strided", namespaces=(torch, torch.Tensor))
declare_all(["view_as", "reshape_as", "expand", "expand_as", "repeat"], namespaces=TENSOR)
declare_all("""flatten unflatten permute transpose swapaxes swapdims t movedim moveaxis squeeze unsqueeze
split split_with_sizes chunk unbind select narrow""".split())
declare_all(["broadcast_to", "broadcast_tensors", "cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack",
             "dstack", "column_stack"], namespaces=TORCH)
declare("getitem", spellings=[operator.getitem, "__getitem__", torch.Tensor.__getitem__], namespaces=(),
        data_dependent="output size, when indexed by a boolean mask")
declare("setitem", spellings=[operator.setitem, "__setitem__"], namespaces=(), mutates=0)
declare("getattr", spellings=[builtins.getattr], namespaces=())  # x.T, x.real: getattr(x, "T") nodes

# -- indexing along a dim, ordering ------------------------------------------------------------------------
INDEX_ALONG_DIM = """gather scatter scatter_add scatter_reduce index_select take_along_dim index_add index_copy
index_fill""".split()
declare_all(INDEX_ALONG_DIM)
declare_all(["scatter_", "scatter_add_", "scatter_reduce_", "index_add_", "index_copy_", "index_fill_"],
            namespaces=TENSOR)
declare_all(["sort", "argsort", "topk", "cummax", "cummin", "roll", "tile", "diff", "flip", "fliplr", "flipud", "rot90",
             "median", "nanmedian", "mode", "kthvalue"])
declare_all(["pixel_shuffle", "pixel_unshuffle", "cosine_similarity", "pairwise_distance"], namespaces=(torch, F))
declare_all(["isin", "bucketize"], namespaces=TORCH)
for _name in ("lstm", "gru", "rnn_tanh", "rnn_relu"):  # what nn.LSTM/GRU/RNN call
    declare(_name, spellings=[getattr(torch._VF, _name)], namespaces=TORCH)
declare("pad_sequence", spellings=[torch._C._nn.pad_sequence], namespaces=())
declare_all(["einsum", "meshgrid", "tensor", "as_tensor", "cdist"], namespaces=TORCH)
declare("new_tensor", namespaces=TENSOR)

# -- nn ----------------------------------------------------------------------------------------------------
declare_all(["softmax", "log_softmax", "cumsum", "cumprod", "logcumsumexp", "tril", "triu"])
declare_all(["cumsum_", "cumprod_", "tril_", "triu_"], namespaces=TENSOR)
declare("interpolate", spellings=[F.upsample], namespaces=(F,))
declare_all("""layer_norm rms_norm group_norm conv1d conv2d conv3d max_pool1d max_pool2d avg_pool1d
adaptive_avg_pool1d adaptive_avg_pool2d""".split(), namespaces=(torch, F))
declare("avg_pool2d", namespaces=(torch, F, torch._C._nn))
declare_all("""batch_norm embedding adaptive_max_pool2d pad scaled_dot_product_attention mse_loss l1_loss
smooth_l1_loss huber_loss""".split(), namespaces=(F,))
declare("nll_loss", namespaces=(F,))
declare("binary_cross_entropy_with_logits", namespaces=(torch,))  # what F's calls (reduction an int)
declare("cross_entropy", namespaces=(F,), aten="cross_entropy_loss")
declare("torch.embedding", spellings=[torch.embedding], namespaces=(), aten="embedding")  # (weight, indices)
# the fused kernels of nn.MultiheadAttention and nn.TransformerEncoderLayer in eval (their fast path)
declare_all(["_native_multi_head_attention", "_transformer_encoder_layer_fwd"], namespaces=(torch,))

# -- results whose size or value depends on tensor data ---------------------------------------------------
SIZE_FROM_DATA = "output size: depends on the tensor's values"
declare_all(["nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount"],
            data_dependent=SIZE_FROM_DATA)
declare("repeat_interleave", data_dependent="output size, when the repeats are a tensor")

# Methods that hand tensor data to Python or change autograd/storage state outside the graph.
DATA_METHODS = ["item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__", "__complex__",
                "data_ptr"]
UNTRACEABLE_METHODS = [
    "backward", "register_hook", "retain_grad", "storage", "untyped_storage", "share_memory_",
    "pin_memory", "record_stream", "resize_", "resize_as_", "set_", "unsqueeze_", "squeeze_",
    "transpose_", "t_", "as_strided_", "swapdims_", "swapaxes_", "__setstate__", "apply_", "map_",
    # facts about storage that guards do not pin
    "storage_offset", "is_pinned", "is_shared", "is_inference", "is_set_to", "_is_view",
]
declare_all(DATA_METHODS, namespaces=TENSOR, data_dependent="a Python value of the tensor's data",
            refused=Refusal("data_dependent", "{what} hands tensor data to Python",
                            hint="keep the value as a tensor, or move this out of the compiled function"))
declare_all(UNTRACEABLE_METHODS, namespaces=TENSOR, refused=Refusal("tensor_method", "pdyn cannot trace {what}"))

# -- Python arithmetic on sizes: nodes the symbolic-int trackers record (`max(n, 2)`, `math.sqrt(d)`) ----
PYTHON_SCALAR = {"builtins.min": builtins.min, "builtins.max": builtins.max, "builtins.int": builtins.int,
                 "builtins.float": builtins.float, "math.floor": math.floor, "math.ceil": math.ceil,
                 "math.sqrt": math.sqrt, "math.trunc": math.trunc}
for _name, _fn in PYTHON_SCALAR.items():
    declare(_name, spellings=[_fn], namespaces=(), mutates=None)

# -- a runtime assert on data-dependent sizes (trace/unbacked.py records it) ------------------------------
declare("runtime_assert", spellings=[runtime_assert], namespaces=(), mutates=None)
# windows and classes (shape_rules_windows.py); F.unfold is im2col, another op: only Tensor.unfold here
declare("unfold", namespaces=(torch.Tensor,))
declare_all(["one_hot", "histc"])

# -- NumPy calls traced through torch._numpy (trace/variables/torch/numpy_arrays.py spells each call's
# graph target as one of these): elementwise ones broadcast, the others specialize the sizes they read
declare("numpy_elementwise", namespaces=(), mutates=None)
declare("numpy_call", namespaces=(), mutates=None)
