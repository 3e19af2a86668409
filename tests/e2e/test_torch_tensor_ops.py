"""End-to-end: Tensor methods and Python operators on tensors under pdyn, compared with eager."""

from __future__ import annotations

import torch

from tests.helpers import check


def test_view_reshape_permute_contiguous():
    def f(x):
        y = x.view(2, 3, 4).permute(0, 2, 1).contiguous()
        return y.reshape(-1, 3), x.reshape(4, 6).transpose(0, 1)

    check(f, torch.randn(6, 4))


def test_view_with_size_arithmetic():
    check(lambda x: x.view(x.size(0) * x.size(1), -1), torch.randn(2, 3, 4))


def test_reductions_with_dim_namedtuple():
    def f(x):
        mx = x.max(dim=1)
        mn = x.min(0, keepdim=True)
        return x.sum(dim=0), x.mean(-1, keepdim=True), mx.values, mx.indices, mn.values, mn[1]

    check(f, torch.randn(3, 4))


def test_max_unpacked_and_full_reduction():
    def f(x):
        values, indices = x.max(-1)
        return values + x.max(), indices, x.sum()

    check(f, torch.randn(2, 5))


def test_split_and_chunk():
    def f(x):
        a, b = x.split(2, dim=1)
        c = x.chunk(3, dim=0)
        return a * b, c[0] + c[2], len(c)

    check(f, torch.randn(3, 4))


def test_split_sizes_list():
    def f(x):
        parts = torch.split(x, [1, 3], dim=-1)
        return [p.sum(-1) for p in parts]

    check(f, torch.randn(2, 4))


def test_expand_repeat_unsqueeze_squeeze():
    def f(x):
        y = x.unsqueeze(0).expand(3, -1, -1)
        return y + x.repeat(3, 1, 1), x.unsqueeze(-1).squeeze(-1), x[None].squeeze(0)

    check(f, torch.randn(2, 4))


def test_dtype_conversions():
    def f(x, i):
        return x.to(torch.float64), i.float(), x.type_as(i), x.half().float(), x.to(dtype=torch.int32), x.long()

    check(f, torch.randn(3) * 10, torch.arange(3))


def test_masked_fill_and_clamp():
    def f(x):
        return x.masked_fill(x < 0, float("-inf")).softmax(-1), x.clamp(min=0.0), x.clamp(-1, 1)

    check(f, torch.randn(3, 4))


def test_flatten_and_t():
    check(lambda x: (x.flatten(1), x.flatten(), x[0].t(), x.mT), torch.randn(2, 3, 4))


def test_arithmetic_operators():
    def f(a, b):
        return a + b, a - b, a * b, a / b, a // b, a % b, a ** 2, a @ b.T, -a, +a, abs(a)

    check(f, torch.randn(3, 3), torch.randn(3, 3) + 3)


def test_reversed_operands():
    check(lambda x: (2 - x, 3 / x, 2 ** x, 1 + x, 5 * x, 7 // (x + 4), 7 % (x + 4)), torch.rand(4) + 0.5)


def test_comparisons_and_logic():
    def f(a, b):
        return a < b, a <= b, a > b, a >= b, a == b, a != b, (a > 0) & (b > 0), (a > 0) | (b > 0), ~(a > 0), \
            (a > 0) ^ (b > 0)

    check(f, torch.randn(5), torch.randn(5))


def test_integer_tensor_arithmetic():
    def f(i, j):
        return i + j, i * 2, i // 3, i % 3, i / j, i << 1, i >> 1, i & j, i | j, -i

    check(f, torch.arange(1, 7), torch.arange(2, 8))


def test_dtype_promotion():
    def f(i, x, d, b):
        return i + x, x + d, i * 1.5, b + b, b * i, i + True, x.to(torch.float16) + d

    check(f, torch.arange(3), torch.randn(3), torch.randn(3, dtype=torch.float64), torch.tensor([True, False, True]))


def test_bool_tensor_ops():
    def f(x):
        m = x > 0
        return m.any(), m.all(dim=0), m.sum(), m.float().mean(), torch.logical_not(m), m.int()

    check(f, torch.randn(3, 4))


def test_float64_math():
    check(lambda x: (x.exp().log1p(), x.sin() ** 2 + x.cos() ** 2, torch.sqrt(x.abs())),
          torch.randn(4, dtype=torch.float64))


def test_zero_size_tensors():
    def f(x):
        return x.sum(0), x * 2, torch.cat([x, x]), x.reshape(0, 2, 2), x.numel()

    check(f, torch.randn(0, 4))


def test_non_contiguous_input():
    x = torch.randn(4, 6).t()
    assert not x.is_contiguous()
    check(lambda x: (x + 1, x.contiguous().view(-1), x.reshape(-1), x.is_contiguous()), x)


def test_sliced_view_input():
    base = torch.randn(5, 8)
    check(lambda x: x * 2 + x.sum(0), base[1:4, ::2])


def test_unary_math_methods():
    check(lambda x: (x.exp(), x.tanh(), x.sigmoid(), x.neg(), x.sign(), x.floor(), x.round(), x.rsqrt().nan_to_num()),
          torch.randn(5))


def test_method_kwargs_and_chaining():
    check(lambda x: x.softmax(dim=-1).log().sum(dim=-1, keepdim=True).squeeze(-1), torch.randn(2, 3))


def test_new_tensor_factories():
    def f(x):
        return x.new_zeros(2, 3), x.new_ones((2,)), x.new_full((2,), 3.0), torch.zeros_like(x), x.new_tensor([1, 2])

    check(f, torch.randn(2, 3, dtype=torch.float64))


def test_gather_scatter_index_select():
    def f(x, idx):
        return x.gather(1, idx), torch.zeros(2, 4).scatter(1, idx, 1.0), x.index_select(0, idx[:, 0])

    check(f, torch.randn(2, 4), torch.tensor([[0, 2], [1, 3]]))


def test_matmul_mismatch_message_matches_eager():
    def f(a, b):
        c = a * 2
        return torch.matmul(c, b)

    check(f, torch.randn(2, 3), torch.randn(2, 3), graphs=0)


def test_view_of_incompatible_size_raises_like_eager():
    check(lambda x: x.view(5, -1), torch.randn(2, 3), graphs=0)


def test_broadcast_mismatch_raises_like_eager():
    check(lambda a, b: a + b, torch.randn(2, 3), torch.randn(4), graphs=0)
