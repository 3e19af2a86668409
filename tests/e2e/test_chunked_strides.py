"""Chunked attention (issue 31, item 3): padding to a multiple of the window, `(seq // w) - 1`,
symbolic strides of a tensor that owns its storage, and `as_strided` of it compile once over
sequence lengths (Longformer's `_chunk`); eager's storage bound still raises as eager does."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import pdyn
from tests.helpers import check_calls

W = 4


def chunk(x):
    b, seq, h = x.shape
    pad = (2 * W - seq % (2 * W)) % (2 * W)
    x = F.pad(x, (0, 0, 0, pad))
    x = x.view(b, x.size(1) // (2 * W), 2 * W, h)
    size, stride = list(x.size()), list(x.stride())
    size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
    chunks = x.as_strided(size=size, stride=stride)
    return chunks.sum(-1) * (x.size(1) // W - 1)


SEQS = [16, 21, 5, 30, 37, 64, 9]


def test_chunk_compiles_once_over_sequence_lengths():
    check_calls(chunk, *[(torch.randn(2, n, 3),) for n in SEQS], compiles=1)


@pytest.mark.parametrize("batch", [1, 3])
def test_chunk_on_triton_compiles_once(batch):
    check_calls(chunk, *[(torch.randn(batch, n, 3),) for n in (16, 21, 5)], compiles=1, backend="triton")


def test_strides_of_a_padded_tensor_are_symbolic():
    def f(x):
        y = F.pad(x, (0, 1)).view(-1)
        z = torch.zeros(x.size(0), 3)
        return y * y.stride(0) + x.sum() * F.pad(x, (0, 1)).stride()[0], z.stride()

    check_calls(f, *[(torch.randn(n, 4),) for n in (3, 5, 1, 8)], compiles=1)


def test_as_strided_past_the_storage_raises_as_eager():
    def f(x):
        y = F.pad(x, (0, 2))
        return y.as_strided((y.size(0), 4), (2, 1)).sum(1)

    calls = [(torch.randn(n, 1),) for n in (4, 1, 6)]   # y has 3n elements, the view reaches element 2n + 1
    check_calls(f, *calls)


def test_as_strided_of_a_slice_is_specialized_and_agrees():
    def f(x):
        return x[1:].as_strided((2, 2), (1, 2)) * 2   # a view of x's storage: no rule, sizes pinned

    check_calls(f, *[(torch.randn(n),) for n in (5, 7, 5)], compiles=2)
