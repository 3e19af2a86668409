"""Pointwise lowerings against eager: math, broadcasting, type promotion, casts, constants."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.nn.functional as F

from tests.backends.util import check, randn

UNARY = {
    "exp": torch.exp, "log": lambda x: torch.log(x.abs() + 0.1), "sqrt": lambda x: x.abs().sqrt(),
    "rsqrt": lambda x: (x.abs() + 0.5).rsqrt(), "sin": torch.sin, "cos": torch.cos,
    "tanh": torch.tanh, "erf": torch.erf, "sigmoid": torch.sigmoid, "relu": F.relu,
    "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu,
    "abs": torch.abs, "neg": operator.neg, "floor": torch.floor, "ceil": torch.ceil,
    "sign": torch.sign, "reciprocal": lambda x: 1 / (x.abs() + 0.5), "square": torch.square,
    "log1p": lambda x: torch.log1p(x.abs()), "expm1": torch.expm1, "exp2": torch.exp2,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_eager(name):
    fn = UNARY[name]
    check(lambda x: fn(x) + 1, (randn(3, 5),), (randn(4, 7),), kernels=1)


BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "maximum": torch.maximum, "minimum": torch.minimum, "lt": operator.lt, "ge": operator.ge,
    "eq": lambda a, b: (a > 0) == (b > 0), "pow": lambda a, b: a.abs() ** b,
    "floordiv": operator.floordiv, "mod": operator.mod, "add_alpha": lambda a, b: torch.add(a, b, alpha=2),
    "div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "logical_and": lambda a, b: torch.logical_and(a > 0, b > 0),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcasts_and_matches_eager(name):
    fn = BINARY[name]
    check(lambda a, b: fn(a, b), (randn(3, 5), randn(5)), (randn(4, 5), randn(5)), kernels=1)


@pytest.mark.parametrize("name", ["floordiv", "mod", "div_trunc", "add", "mul"])
def test_integer_ops_keep_torch_semantics(name):
    fn = BINARY[name]

    def ints(*shape):
        return torch.randint(-9, 9, shape)

    b = ints(5)
    b[b == 0] = 3
    check(lambda x, y: fn(x, y), (ints(3, 5), b), (ints(4, 5), b))


def test_scalar_promotion_int_tensor_times_float():
    check(lambda x: x * 2.5 + 1, (torch.arange(6).view(2, 3),), (torch.arange(12).view(4, 3),))


def test_int_graph_input_is_a_kernel_argument():
    rec = check(lambda x, n: x * n + n, (randn(3, 4), 3), (randn(5, 4), 7), (randn(6, 4), 9))
    assert "ks" in rec.last.kernel_sources[0]


def test_where_clamp_and_casts():
    def fn(x):
        y = torch.where(x > 0, x, x * 0.1).clamp(-0.5, 0.5)
        return y.to(torch.float64), (x * 10).int(), (x > 0).float().sum(0)

    check(fn, (randn(3, 5),), (randn(4, 6),))


def test_constants_full_like():
    check(lambda x: x + torch.ones_like(x) * 2 + torch.full_like(x, 3.0), (randn(3, 5),), (randn(2, 5),))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_computes_in_float32(dtype):
    check(lambda x, y: torch.sigmoid(x * y + 1) - x, (randn(4, 6, dtype=dtype), randn(6, dtype=dtype)),
          (randn(5, 6, dtype=dtype), randn(6, dtype=dtype)))


def test_pointwise_chain_is_one_kernel():
    def chain(x, y):
        a = x * 2 + y
        b = torch.relu(a) - torch.sigmoid(a)
        return torch.tanh(b) * a + 1

    check(chain, (randn(4, 8), randn(8)), (randn(6, 8), randn(8)), kernels=1)


def test_nan_propagates_through_relu_and_maximum():
    x = torch.tensor([[float("nan"), -1.0, 2.0]])
    check(lambda x: (F.relu(x), torch.maximum(x, torch.zeros_like(x))), (x,), compiles=None)
