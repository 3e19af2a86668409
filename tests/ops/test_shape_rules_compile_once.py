"""A program calling an op with a shape rule compiles once over several batch sizes: the rule keeps
the batch symbolic where an op without one specializes it (a recompile per size)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import pdyn
from tests.helpers import check_calls

BATCHES = (3, 4, 7)


def _over_batches(fn, make) -> None:
    check_calls(fn, *(make(n) for n in BATCHES), compiles=1)


def _rows(n: int, *rest: int) -> torch.Tensor:
    return torch.randn(n, *rest)


def _labels(n: int, classes: int = 5) -> torch.Tensor:
    return torch.randint(0, classes, (n,))


def test_gather_of_labels_compiles_once():
    """The regression: `x.gather(-1, t[:, None])` recompiled for every batch size."""
    _over_batches(lambda x, t: x.gather(-1, t[:, None]).squeeze(-1), lambda n: (_rows(n, 5), _labels(n)))


INDEXING = {
    "scatter": lambda x, t: torch.zeros_like(x).scatter(1, t[:, None], 1.0),
    "scatter_": lambda x, t: x.clone().scatter_(1, t[:, None], x[:, :1]),
    "scatter_add": lambda x, t: torch.zeros_like(x).scatter_add(1, t[:, None], x[:, :1]),
    "scatter_reduce": lambda x, t: x.scatter_reduce(1, t[:, None], x[:, :1], "amax", include_self=True),
    "index_select": lambda x, t: x.index_select(0, t % x.shape[0]),
    "take_along_dim": lambda x, t: torch.take_along_dim(x, t[:, None], dim=1),
    "index_add": lambda x, t: x.index_add(1, t[:2], x[:, :2]),
    "index_copy_": lambda x, t: x.clone().index_copy_(1, torch.tensor([0, 2]), x[:, 3:]),
    "index_fill": lambda x, t: x.index_fill(1, t[:1], -1.0),
    "embedding": lambda x, t: F.embedding(t, x[:5]),
    "torch.embedding": lambda x, t: torch.embedding(x[:5], t[:, None]),
    "narrow": lambda x, t: x.narrow(0, 1, x.shape[0] - 2),
    "select": lambda x, t: x.select(1, -1) + x.select(0, 2).sum(),
}


@pytest.mark.parametrize("name", list(INDEXING))
def test_indexing_compiles_once(name):
    _over_batches(INDEXING[name], lambda n: (_rows(n + 2, 5), _labels(n + 2)))


ALONG_DIM = {
    "cumsum": lambda x: x.cumsum(0) + torch.cumprod(x, dim=1),
    "cumsum_": lambda x: x.clone().cumsum_(0),
    "cummax": lambda x: torch.cummax(x, 0).values + x.cummin(1)[1],
    "topk": lambda x: x.topk(2, dim=-1).values + x.topk(x.shape[0] // 2, dim=0).indices.sum(),
    "sort": lambda x: torch.sort(x, dim=0, descending=True).values + x.argsort(-1),
    "roll": lambda x: torch.roll(x, 1, 0) + x.roll((1, -1), (0, 1)),
    "tril": lambda x: torch.tril(x) + x.triu(1) + x.clone().tril_() + x.clone().triu_(-1),
    "masked_fill": lambda x: x.masked_fill(x > 0, 0.0) + x.clone().masked_fill_(x < 0, 1.0),
    "where": lambda x: torch.where(x > 0, x, 0.0) + torch.where(x > 0, 1.0, -1.0) + x.where(x < 1, x * 2),
    "repeat": lambda x: x.repeat(2, 1)[: x.shape[0]] + x.tile((1, 1)),
    "einsum": lambda x: torch.einsum("bi,bj->bij", x, x).sum(-1) + torch.einsum("bi->b", x)[:, None],
    "softmax": lambda x: F.softmax(x, -1) + F.log_softmax(x, dim=0) + F.gelu(x) + F.silu(x) + F.dropout(x, 0.0),
    "diff": lambda x: torch.diff(x, dim=0, prepend=x[:1]) + torch.diff(x, n=2, dim=1).sum(-1, keepdim=True),
    "from_data": lambda x: x + torch.tensor([x.shape[0]] * 6) + x.new_tensor([[1.0] * 6]),
    "meshgrid": lambda x: torch.meshgrid(x[:, 0], x[0], indexing="ij")[0] + torch.meshgrid(x[:, 1], x[1])[1],
    "broadcast_tensors": lambda x: sum(torch.broadcast_tensors(x, x[:1], x[:, :1])) + torch.cdist(x, x[:3]).sum(-1, True),
    "flip": lambda x: torch.flip(x, (0,)) + x.flip(-1) + x.fliplr().flipud() + torch.rot90(torch.rot90(x), -1),
    "stacks": lambda x: torch.hstack([x, x])[:, :6] + torch.vstack((x, x[:1]))[1:] + torch.dstack([x, x]).sum(-1)
    + torch.column_stack([x[:, 0], x[:, 1:]]) + torch.row_stack([x]),
    "clamp": lambda x: x.clamp(-0.5, 0.5) + x.clamp(min=x[:1]) + x.type_as(x).to(torch.float32).contiguous(),
}


@pytest.mark.parametrize("name", list(ALONG_DIM))
def test_ops_along_a_dim_compile_once(name):
    _over_batches(ALONG_DIM[name], lambda n: (_rows(n, 6),))


def test_interpolate_compiles_once():
    fn = lambda x: (F.interpolate(x, scale_factor=2, mode="nearest").sum((2, 3))  # noqa: E731
                    + F.interpolate(x, scale_factor=1.5, mode="bilinear").mean((2, 3))
                    + F.interpolate(x, size=(x.shape[2] + 1, 3), mode="bilinear", align_corners=True).sum((2, 3)))
    _over_batches(fn, lambda n: (_rows(2, 3, n, n + 1),))
    seq = lambda x: F.interpolate(x, scale_factor=2, mode="linear")  # noqa: E731
    _over_batches(seq, lambda n: (_rows(n, 3, 5),))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_compiles_once(mode):
    _over_batches(lambda x: F.pad(x, (1, 2), mode=mode), lambda n: (_rows(n, 3, 5),))
    _over_batches(lambda x: F.pad(x, (1, 1, 2, 0), mode=mode), lambda n: (_rows(2, 3, n, 4),))


def test_attention_and_matmuls_compile_once():
    def fn(q, k, v, w, b):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        flat = out.flatten(0, 1)
        y = torch.baddbmm(flat, flat, flat.mT[..., :4]) + torch.bmm(flat, flat.transpose(1, 2)[..., :4])
        z = torch.addmm(b, y.flatten(0, 1), w) + F.linear(y.flatten(0, 1), w.T, b)
        y = y + flat.baddbmm(batch1=flat, batch2=flat.mT[..., :4], beta=0.5) \
            + torch.addmm(b, mat1=y.flatten(0, 1), mat2=w).view_as(y)  # torch's keyword names
        return F.layer_norm(z, (4,)) + F.rms_norm(z, (4,))

    def make(n: int):
        return (_rows(2, 2, n, 4), _rows(2, 2, n, 4), _rows(2, 2, n, 4), _rows(4, 4), _rows(4))

    _over_batches(fn, make)


def test_factories_and_views_compile_once():
    def fn(x):
        n = x.shape[0]
        mask = torch.full((n, n), float("-inf")).triu(1) + torch.zeros(n, n) + torch.ones(n, 1)
        pos = torch.arange(n) + torch.arange(1, n + 1) + x.new_zeros(n).long() + x.new_ones((n,)).long()
        parts = x.chunk(2, dim=1) + x.split(3, dim=1) + x.unbind(1)
        columns = [p[:, None] for p in parts[4:7]]
        y = torch.stack([parts[0], parts[1]]).sum(0) + torch.cat(columns, 1)
        z = y.unsqueeze(0).squeeze(0).expand_as(y).view_as(y).flatten().unflatten(0, (n, -1))
        full = x.new_full((n, 2), 1.0) + x.new_empty((n, 2)).zero_()
        return mask @ x, pos, z.mT.permute(1, 0), full

    _over_batches(fn, lambda n: (_rows(n, 6),))


def test_grouped_query_attention_compiles_once():
    """Llama's attention without a mask: fewer key/value heads than query heads (enable_gqa)."""
    def fn(q, k, v, mask):
        return (F.scaled_dot_product_attention(q, k, v, enable_gqa=True)  # repeat_interleave: Llama's repeat_kv
                + F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1),
                                                 attn_mask=mask))

    def make(n: int):
        return _rows(n, 4, n + 1, 8), _rows(n, 2, n + 1, 8), _rows(n, 2, n + 1, 8), _rows(n + 1, n + 1) > 0

    _over_batches(fn, make)


def _attention_with_a_flag_from_sizes(q, k, v, mask):
    """transformers 5.17's SDPA integration: `and` hands back the comparison itself where it is
    false, so `is_causal` is `q_len > 1` (a comparison of sizes) on decode steps."""
    is_causal = q.shape[2] > 1 and mask is None and True
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)


@pytest.mark.parametrize("backend", ["eager", "triton"])
def test_a_comparison_of_sizes_passed_as_a_flag_is_decided_not_a_break(backend):
    def step(batch, q_len, kv_len, masked):
        q, k, v = (torch.randn(batch, 2, n, 8) for n in (q_len, kv_len, kv_len))
        return q, k, v, (torch.randn(batch, 1, q_len, kv_len) if masked else None)

    decode = [step(2, 1, n, True) for n in (5, 6, 7)]
    prefill = [step(b, n, n, False) for b, n in ((2, 5), (3, 7))]
    f = check_calls(_attention_with_a_flag_from_sizes, *decode, *prefill, compiles=2, backend=backend)
    assert pdyn.stats(f)["graph_breaks"] == 0
