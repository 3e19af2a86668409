"""Triton backend results that once were wrong or raised where eager returned: op dtypes, size-1
dims, size expressions in kernels, what eager rejects, output strides, in-place operators. Each
test calls one compiled function with shapes and values that change between calls."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

import pdyn
from tests.backends.util import DEVICE, check, check_like_eager, randn


def ints(*shape: int, dtype: torch.dtype = torch.int32) -> torch.Tensor:
    return torch.randint(-20, 20, shape, dtype=dtype, device=DEVICE)


# -- each op's Triton result has the dtype the IR declares ----------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int8, torch.bool])
def test_sign_keeps_its_dtype_for_the_next_op(dtype):
    def fn(x):
        s = torch.sign(x)
        return s.floor() if s.dtype.is_floating_point else s * 3

    def arg(*shape):
        return randn(*shape).to(dtype) if dtype != torch.bool else randn(*shape) > 0

    check(fn, (arg(3, 4),), (arg(5, 2),), compiles=None)


def test_sign_of_nan_and_zero_matches_eager():
    x = torch.tensor([float("nan"), -0.0, 0.0, 2.0, -3.0])
    check(lambda x: torch.sign(x).floor() + 1, (x,), (x[1:],), compiles=None)


# -- size-1 dims: every load and store spans the kernel's block -----------------------------------
def test_minimum_with_keepdim_mean_of_one_element():
    fn = lambda t: torch.minimum(t, t.mean(-2, keepdim=True))  # noqa: E731
    check(fn, (randn(1, 1),), (randn(1, 1),), (randn(3, 1),), compiles=None)


@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_over_a_dim_beside_a_size_one_dim(dim):
    check(lambda x: torch.softmax(x, dim=dim), (randn(4, 1),), (randn(6, 1),), (randn(1, 5),),
          compiles=None)


def test_reductions_of_size_one_tensors():
    def fn(x):
        return x.sum(0), x.amax(1, keepdim=True) - x, x.argmax(0), (x > 0).sum()

    check(fn, (randn(1, 1),), (randn(5, 1),), (randn(1, 7),), compiles=None)


def test_comparisons_of_constants_and_single_elements():
    def fn(x):
        a = (torch.ones_like(x) != torch.zeros_like(x)) | (x > 0)
        b = torch.isnan(torch.zeros_like(x)) | (x[:1, :1] != x[:1, :1])
        return a, b, torch.where(x[0, 0] > 0, x, -x)

    check(fn, (randn(3, 4),), (randn(1, 1),), (randn(2, 5),), compiles=None)


# -- sizes and floats computed from sizes inside kernels ------------------------------------------
SIZE_SCALARS = {
    "softmax_sqrt": lambda x: torch.softmax(x / math.sqrt(x.shape[-1] + 1), -1),
    "pow_half": lambda x: x / (x.shape[-1] ** 0.5),
    "ratio": lambda x: x + x.shape[0] / x.shape[1],
    "float_times_size": lambda x: x * (x.shape[0] * 0.5),
    "int_tensor": lambda x: (x * 10).int() * (x.shape[-1] / 2),
    "where": lambda x: torch.where(x > 0, x, x.shape[-1] / 7),
    "clamp": lambda x: x.clamp(min=-x.shape[0] / 10, max=x.shape[1] / 10),
    "float64": lambda x: x.double() / math.sqrt(x.shape[-1]),
    "float16": lambda x: x.half() / math.sqrt(x.shape[-1]),
    "int_sizes": lambda x: x * (x.shape[1] % 3) - x.shape[0] // 2 + max(x.shape[0], x.shape[1]),
}


@pytest.mark.parametrize("name", sorted(SIZE_SCALARS))
def test_float_and_int_values_of_sizes_reach_kernels(name):
    check(SIZE_SCALARS[name], (randn(3, 4),), (randn(5, 9),), (randn(6, 16),), compiles=None)


# -- what eager rejects, the compiled function rejects with the same exception -------------------
def _floats(dtype):
    return lambda *shape: (randn(*shape) * 5).to(dtype)


def _magnitudes(dtype):
    return lambda *shape: (randn(*shape) * 5).abs().to(dtype)


def _bools(*shape):
    return randn(*shape) > 0


REJECTED = {  # name: (fn, make an argument from a shape)
    "softmax_int64": (lambda x: torch.softmax(x, -1), _floats(torch.int64)),
    "log_softmax_int32": (lambda x: torch.log_softmax(x, 0), _floats(torch.int32)),
    "gelu_int64": (lambda x: F.gelu(x), _floats(torch.int64)),
    "silu_int32": (lambda x: F.silu(x) + 1, _floats(torch.int32)),
    "abs_bool": (lambda x: torch.abs(x), _bools),
    "floor_bool": (lambda x: torch.floor(x) | x, _bools),
    "argmax_bool": (lambda x: x.argmax(-1), _bools),
    "sub_bool": (lambda x: (x * 2) - (x > 0), _floats(torch.float32)),
    "layer_norm_float64_weight": (lambda x: F.layer_norm(x, x.shape[-1:], x[0].double()),
                                  _floats(torch.float32)),
    "layer_norm_half_bias": (lambda x: F.layer_norm(x, x.shape[-1:], x[0], x[0].half()),
                             _floats(torch.float32)),
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_what_eager_rejects_raises_the_same_exception(name):
    fn, make = REJECTED[name]
    check_like_eager(fn, (make(3, 4),), (make(5, 6),))


ACCEPTED = {  # mixed dtypes and wrapping constants that eager computes
    "rms_norm_float64_weight": (lambda x: F.rms_norm(x, x.shape[-1:], x[0].double()),
                                _floats(torch.float32)),
    "bool_add_saturates": (lambda x: (x + x.flip(0)) | (x & x), _bools),
    "uint8_clamp_wraps_minus_one": (lambda x: x.clamp(-1, 1) + torch.where(x > 3, x, -1),
                                    _magnitudes(torch.uint8)),
    "int8_times_float64": (lambda x: x * x.double(), _floats(torch.int8)),
    "linear_float_bias": (lambda x: F.linear(x, x[:2], x[0, :2]), _floats(torch.float32)),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_mixed_dtypes_eager_accepts_match_eager(name):
    fn, make = ACCEPTED[name]
    check_like_eager(fn, (make(3, 4),), (make(5, 6),))


# -- outputs and realized values have eager's strides ---------------------------------------------
LAYOUTS_2D = {  # two calls of each: the layout stays, the sizes change
    "contiguous": [randn(3, 4), randn(5, 6)],
    "transposed": [randn(4, 3).t(), randn(6, 5).t()],
    "sliced": [randn(4, 8)[:, ::2], randn(6, 8)[:, ::2]],
    "row": [randn(1, 4), randn(1, 6)],
    "transposed_row": [randn(1, 4).t(), randn(1, 6).t()],
}
OUTPUTS_2D = {
    "t_plus_1": lambda x: x.t() + 1,
    "relu_transpose": lambda x: torch.relu(x.transpose(0, 1)),
    "broadcast": lambda x: x * x.sum(0, keepdim=True),
    "realized_twice": lambda x: (lambda y: (y, y.sum(0)))(
        x.t().exp() * 2 + x.t().sin() * 3 + x.t().cos() * 4 + x.t().tanh() + x.t() ** 2 + x.t().abs()),
    "reductions": lambda x: (x.t().sum(0, keepdim=True), x.amax(-1, keepdim=True), x.t().max(-1, keepdim=True)),
    "softmax_layer_norm": lambda x: (torch.softmax(x.t(), 0), F.layer_norm(x.t(), x.t().shape[-1:])),
    "clone_cast": lambda x: (x.t().clone(), x.t().double() * 2),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS_2D))
@pytest.mark.parametrize("fn", sorted(OUTPUTS_2D))
def test_outputs_have_eager_strides(fn, layout):
    check_like_eager(OUTPUTS_2D[fn], *[(x,) for x in LAYOUTS_2D[layout]])


@pytest.mark.parametrize("perm", [(2, 0, 1), (1, 2, 0), (0, 2, 1)])
def test_permuted_outputs_have_eager_strides(perm):
    def fn(x):
        return x.permute(*perm) * 2, torch.relu(x).permute(*perm).sum(1, keepdim=True)

    check_like_eager(fn, (randn(2, 3, 4),), (randn(3, 4, 5),), (randn(3, 1, 5),), (randn(3, 1, 5).permute(2, 1, 0),))


def test_stride_order_of_inputs_is_checked_on_each_call():
    # both layouts keep stride 1 innermost; eager lays the result out as each input is laid out
    check_like_eager(lambda x: x * 2, (randn(4, 3, 5).permute(1, 0, 2),), (randn(3, 4, 10)[:, :, :5],),
                     (randn(5, 4, 6).permute(1, 0, 2),))


VIEWS_AFTER_CONTIGUOUS = {
    "t_view": lambda x: x.t().contiguous().view(-1),
    "transpose_view_ab": lambda x: x.transpose(0, 1).contiguous().view(x.shape[1] * x.shape[0] // 2, 2),
    "contiguous_view": lambda x: x.contiguous().view(-1) + 1,
    "view_of_realized_transpose": lambda x: (x.t() + 1).t().view(-1),
    "view_of_realized_twice": lambda x: (lambda y: (y.t().view(-1), y.sum()))(x.t().exp() + x.t().sin() * 2),
}


@pytest.mark.parametrize("name", sorted(VIEWS_AFTER_CONTIGUOUS))
def test_views_after_contiguous_or_of_realized_values_match_eager(name):
    fn = VIEWS_AFTER_CONTIGUOUS[name]
    check_like_eager(fn, (randn(4, 6),), (randn(8, 6)[:, :4],), (randn(2, 8),), (randn(6, 4).t(),))


@pytest.mark.parametrize("backend", ["eager", "triton"])
def test_contiguous_traced_as_alias_breaks_a_later_layout(backend):
    check_like_eager(lambda x: x.t().contiguous().view(-1), (randn(6, 4).t(),), (randn(8, 6)[:, :4],),
                     backend=backend)


# -- in-place operators: a graph that writes runs as eager runs it --------------------------------
def _ixor(x):
    y = x + 1
    y ^= 3
    return y * 2


def _ilshift(x):
    y = x + 1
    y <<= 2
    return y * 2


def _irshift(x):
    y = x + 5
    y >>= 1
    return y - 1


def _iand_ior(x):
    y = x + 1
    y &= 6
    y |= 1
    return y * 2


def _relu_inplace_positional(x):
    y = x + 1
    F.relu(y, True)
    return y * 2


IN_PLACE = [_ixor, _ilshift, _irshift, _iand_ior]


@pytest.mark.parametrize("backend", ["eager", "triton"])
@pytest.mark.parametrize("fn", IN_PLACE, ids=lambda f: f.__name__)
def test_in_place_bitwise_operators_match_eager(backend, fn):
    compiled = pdyn.optimize(fn, backend=backend)
    for x in (ints(6), ints(3, 4), ints(9)):
        torch.testing.assert_close(compiled(x.clone()), fn(x.clone()))


def _imatmul(x):
    y = x + 1
    y @= x  # Tensor has no __imatmul__: Python rebinds y to y @ x
    return y * 2


def _ixor_method(x):
    y = x + 1
    y.__ixor__(3)
    return y * 2


@pytest.mark.parametrize("backend", ["eager", "triton"])
@pytest.mark.parametrize("fn", [_imatmul, _ixor_method], ids=lambda f: f.__name__)
def test_other_in_place_spellings_match_eager(backend, fn):
    compiled = pdyn.optimize(fn, backend=backend)
    make = (lambda n: randn(n, n)) if fn is _imatmul else (lambda n: ints(n, 2))
    for x in (make(3), make(4), make(5)):
        torch.testing.assert_close(compiled(x.clone()), fn(x.clone()))


# -- one op, several spellings: each lowers as the op it spells ------------------------------------
@pytest.mark.parametrize("backend", ["eager", "triton"])
def test_binary_torch_max_is_maximum(backend):
    check_like_eager(lambda a, b: torch.max(a, b) * 2, (randn(4, 4), randn(4, 4)), (randn(6, 3), randn(6, 3)),
                     backend=backend)


@pytest.mark.parametrize("backend", ["eager", "triton"])
def test_where_method_takes_self_as_the_true_branch(backend):
    check_like_eager(lambda x, c: x.where(c, torch.zeros_like(x)) + 1, (randn(4, 4), randn(4, 4) > 0),
                     (randn(6, 3), randn(6, 3) > 0), backend=backend)


@pytest.mark.parametrize("backend", ["eager", "triton"])
def test_positional_inplace_flag_is_a_write(backend):
    compiled = pdyn.optimize(_relu_inplace_positional, backend=backend)
    for x in (randn(6), randn(3, 4)):
        torch.testing.assert_close(compiled(x.clone()), _relu_inplace_positional(x.clone()))


def test_every_op_spelling_has_its_declared_dtype_in_its_domain():
    """Each template on operands of each dtype in its domain compiles to that dtype (bool for
    comparisons): a kernel's later ops and stores rely on the dtype the IR declares."""
    from pdyn.backends.triton import runtime, triton_ops as T

    names = sorted(set(T.COMMON) | set(T.INTERPRET))
    dtypes = [torch.float32, torch.float64, torch.int32, torch.int64, torch.int8, torch.bool]
    interpret = runtime.use_interpreter()
    lines = ["import triton", "import triton.language as tl", T.PREAMBLE]
    if not interpret:
        lines.insert(2, "from triton.language.extra import libdevice")
    cases = []
    for name in names:
        for dtype in (d for d in dtypes if T.in_domain(name, d)):
            args = ["(a != 0)", "a", "a"] if name == "where" else ["a", "a", "a"]
            result = torch.bool if name in T.BOOL_RESULT_OPS else dtype
            kernel = f"k_{name}_{str(dtype)[6:]}"
            lines += ["@triton.jit", f"def {kernel}(p):", "    a = tl.load(p + tl.arange(0, 4))",
                      f"    r = {T.op_text(name, args, interpret)}",
                      f"    tl.static_assert(r.dtype == {T.dtype_text(result)})", ""]
            cases.append((kernel, dtype))
    module = runtime.load_kernel("\n".join(lines), interpret)
    for kernel, dtype in cases:
        getattr(module, kernel)[(1,)](torch.ones(4, dtype=dtype, device=DEVICE))


def _node(op: str, target, *args, **kwargs) -> torch.fx.Node:
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    return graph.create_node(op, target, (x, *args), kwargs)


def test_every_in_place_operator_and_method_mutates():
    import operator

    from pdyn.ops.effects import mutates

    in_place = [getattr(operator, n) for n in ("iadd", "isub", "imul", "itruediv", "ifloordiv",
                "imod", "ipow", "iand", "ior", "ixor", "ilshift", "irshift", "imatmul")]
    assert all(mutates(_node("call_function", f, 1)) for f in in_place)
    methods = [n for n in dir(torch.Tensor) if n.endswith("_") and not n.startswith("_")]
    methods += [n for n in dir(torch.Tensor) if n.startswith("__i") and hasattr(torch.Tensor, "__" + n[3:])]
    assert len(methods) > 100 and [m for m in methods if not mutates(_node("call_method", m, 1))] == []
    assert mutates(_node("call_function", torch.ops.aten.add_.Tensor, 1))
    assert mutates(_node("call_function", F.relu, True))
    assert mutates(_node("call_function", F.dropout, 0.5, True, True))


def test_out_of_place_ops_do_not_mutate():
    import operator

    from pdyn.ops.effects import mutates

    for fn in (operator.and_, operator.or_, operator.xor, operator.add, operator.lshift,
               operator.matmul, operator.getitem, torch.add):
        assert not mutates(_node("call_function", fn, 1)), fn
    for fn in (torch.relu, F.relu, torch.sort, F.dropout):
        assert not mutates(_node("call_function", fn)), fn
    for name in ("add", "relu", "sort", "contiguous", "view", "__add__", "__and__", "__index__"):
        assert not mutates(_node("call_method", name, 1)), name


def test_a_pointwise_result_of_an_expanded_input_has_eager_strides():
    """An expanded input (stride 0) has no place in eager's layout order: `x.expand(2, 1, 2) * 0.5`
    comes out contiguous, not with the broadcast dim innermost."""
    def f(t):
        return t * 0.5

    compiled = pdyn.optimize(f, backend="triton")
    for base in (randn(1, 2), randn(3, 4)):
        x = base.expand(2, *base.shape)
        expected, actual = f(x), compiled(x)
        assert actual.stride() == expected.stride()
        torch.testing.assert_close(actual, expected)
