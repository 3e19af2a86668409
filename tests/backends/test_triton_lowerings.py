"""Ops that used to fall back to torch, now lowered: each compiles with no fallback in the wrapper
and returns what eager returns, on two sizes with one compile."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import pdyn
from tests.backends.util import DEVICE, check, randn


def no_fallbacks(fn, *calls, compiles=1, kernels=None):
    rec = check(fn, *calls, compiles=compiles, kernels=kernels)
    for graph in rec.graphs:
        assert graph is not None, "the graph ran with torch"
        assert graph.fallbacks == [], graph.wrapper_source
        assert "# fallback" not in graph.wrapper_source
    return rec


def idx(high, *shape):
    return torch.randint(0, high, shape, device=DEVICE)


# NOTE: on the GPU an index out of range fails a device-side assert (eager's too) and poisons the context
cpu_only = pytest.mark.skipif(DEVICE == "cuda", reason="an out-of-range index fails a device assert on the GPU")


def test_masked_fill_fuses_into_softmax():
    fn = lambda x, m: x.masked_fill(m, float("-inf")).softmax(-1)  # noqa: E731
    no_fallbacks(fn, (randn(4, 6), randn(4, 6) > 1), (randn(5, 9), randn(5, 9) > 1), kernels=1)
    no_fallbacks(lambda x, m: torch.masked_fill(x, m[:, None], 0.5) * 2, (randn(4, 6), randn(4) > 0),
                 (randn(5, 9), randn(5) > 0))


def test_where_with_scalars_and_clamp_with_tensor_bounds():
    no_fallbacks(lambda x: torch.where(x > 0, x, 0.0) + torch.where(x < 0, 1.0, -1.0), (randn(4, 6),), (randn(5, 9),))
    no_fallbacks(lambda x, lo, hi: torch.clamp(x, lo, hi) + torch.clamp_min(x, lo) - x.clamp_max(hi),
                 (randn(4, 6), randn(4, 6), randn(6) + 1), (randn(5, 9), randn(5, 9), randn(9) + 1))


def test_dropout_in_eval_is_the_input():
    no_fallbacks(lambda x: F.dropout(x, 0.3, training=False) * 2, (randn(4, 6),), (randn(5, 9),))


def test_dropout_in_training_still_runs_with_torch():
    rec = check(lambda x: F.dropout(x, 0.0, training=True) * 2, (randn(4, 6),))
    assert rec.last.fallbacks


def test_factories_with_symbolic_sizes():
    no_fallbacks(lambda x: x + torch.arange(x.shape[1], device=x.device), (randn(4, 6),), (randn(5, 9),))
    no_fallbacks(lambda x: x * torch.arange(1, 2 * x.shape[0] + 1, 2, dtype=torch.float32, device=x.device)[:, None],
                 (randn(4, 6),), (randn(5, 9),))
    no_fallbacks(lambda x: x + torch.zeros(x.shape[0], x.shape[1], device=x.device) + torch.ones(
        x.shape[1], device=x.device) * torch.full((x.shape[0], 1), 2.0, device=x.device), (randn(4, 6),), (randn(5, 9),))


def test_gather_index_select_embedding():
    no_fallbacks(lambda x, i: torch.gather(x * 2, 1, i) + 1, (randn(4, 6), idx(6, 4, 3)), (randn(5, 9), idx(9, 5, 2)))
    no_fallbacks(lambda x, i: torch.gather(x, 0, i), (randn(4, 6), idx(4, 2, 6)), (randn(5, 9), idx(5, 3, 9)))
    no_fallbacks(lambda x, i: x.index_select(0, i) * 2, (randn(4, 6), idx(4, 3)), (randn(5, 9), idx(5, 7)))
    no_fallbacks(lambda x, i: x.index_select(1, i).sum(-1), (randn(4, 6), idx(6, 3)), (randn(5, 9), idx(9, 7)))
    no_fallbacks(lambda w, t: F.embedding(t, w) * 2, (randn(10, 5), idx(10, 2, 3)), (randn(12, 5), idx(12, 3, 4)))
    no_fallbacks(lambda w, t: torch.embedding(w, t) + 1, (randn(10, 5), idx(10, 3)), (randn(12, 5), idx(12, 4)))


@cpu_only
@pytest.mark.parametrize("fn, error", [
    (lambda x, i: torch.gather(x, 1, i), RuntimeError),
    (lambda x, i: x.index_select(1, i[0]), RuntimeError),
    (lambda x, i: x.index_select(0, i[0]), IndexError),
    (lambda x, i: F.embedding(i, x), IndexError),
])
def test_indices_out_of_range_raise_as_in_eager(fn, error):
    compiled = pdyn.optimize(fn, backend="triton")
    x = randn(4, 6)
    good = idx(4, 4, 3)
    torch.testing.assert_close(compiled(x, good), fn(x, good))
    for bad in (good + 6, good - 5):
        with pytest.raises(error):
            fn(x, bad)
        with pytest.raises(error):
            compiled(x, bad)


def test_logsumexp():
    no_fallbacks(lambda x: torch.logsumexp(x, 1), (randn(4, 6),), (randn(5, 9),))
    no_fallbacks(lambda x: torch.logsumexp(x * 2, dim=0, keepdim=True), (randn(4, 6),), (randn(5, 9),))
    inf = float("inf")
    no_fallbacks(lambda x: torch.logsumexp(x, -1), (torch.tensor([[-inf, -inf], [inf, 1.0], [2.0, 3.0]], device=DEVICE),))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_and_nll_loss(reduction):
    def targets(n, c):
        t = idx(c, n)
        t[1] = -100
        return t

    no_fallbacks(lambda x, t: F.cross_entropy(x, t, reduction=reduction), (randn(5, 7), targets(5, 7)),
                 (randn(8, 11), targets(8, 11)))
    no_fallbacks(lambda x, t: F.nll_loss(F.log_softmax(x, -1), t, reduction=reduction),
                 (randn(5, 7), targets(5, 7)), (randn(8, 11), targets(8, 11)))


def test_cross_entropy_written_with_logsumexp_and_gather():
    fn = lambda x, t: (torch.logsumexp(x, -1) - x.gather(1, t[:, None])[:, 0]).mean()  # noqa: E731
    no_fallbacks(fn, (randn(5, 7), idx(7, 5)), (randn(8, 11), idx(11, 8)))


@cpu_only
def test_cross_entropy_out_of_range_target_raises():
    compiled = pdyn.optimize(lambda x, t: F.cross_entropy(x, t), backend="triton")
    compiled(randn(4, 6), idx(6, 4))
    with pytest.raises(IndexError):
        compiled(randn(4, 6), idx(6, 4) + 6)


def test_cumsum_cumprod_are_scans():
    no_fallbacks(lambda x: torch.cumsum(x * 2, 1) + 1, (randn(4, 6),), (randn(5, 9),))
    no_fallbacks(lambda x: x.cumsum(0), (randn(4, 6),), (randn(5, 9),))
    no_fallbacks(lambda x: torch.cumprod(x, -1), (randn(4, 6),), (randn(5, 9),))
    no_fallbacks(lambda i: i.cumsum(1), (idx(5, 4, 6),), (idx(5, 5, 9),))


def test_long_scans_loop_with_a_carry():
    rec = no_fallbacks(lambda x: torch.cumsum(x, 1), (randn(3, 5000).abs(),))
    assert "carry" in rec.last.kernel_sources[0]
    no_fallbacks(lambda x: torch.cumsum(x, 0), (randn(300, 3),))


def test_attention_is_an_extern_call_between_fused_kernels():
    def attn(x):
        q = (x * 0.5).view(2, x.shape[1], 2, 4).transpose(1, 2)
        k = x.view(2, x.shape[1], 2, 4).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, k, is_causal=True)
        return o.transpose(1, 2).reshape(2, x.shape[1], 8) * 2 + x

    rec = no_fallbacks(attn, (randn(2, 5, 8),), (randn(2, 7, 8),), kernels=2)
    assert "extern: scaled_dot_product_attention" in rec.last.wrapper_source


# -- the index check fuses into the kernel that walks the indices (no check kernel, no sync) --------
def test_cross_entropy_with_gather_runs_a_row_kernel_and_a_mean():
    fn = lambda x, t: (torch.logsumexp(x, -1) - x.gather(1, t[:, None])[:, 0]).mean()  # noqa: E731
    rec = no_fallbacks(fn, (randn(5, 7), idx(7, 5)), (randn(8, 11), idx(11, 8)), kernels=2)
    assert "_check" not in rec.last.wrapper_source  # the check is inside the row kernel
    assert "_index_check(" in rec.last.kernel_sources[0] or "device_assert" in rec.last.kernel_sources[0]


@pytest.mark.parametrize("reduction, kernels", [("mean", 2), ("sum", 2), ("none", 1)])
def test_cross_entropy_kernels_with_ignore_index(reduction, kernels):
    def targets(n, c):
        t = idx(c, n)
        t[1] = -100
        return t

    no_fallbacks(lambda x, t: F.cross_entropy(x, t, reduction=reduction), (randn(5, 7), targets(5, 7)),
                 (randn(8, 11), targets(8, 11)), kernels=kernels)


@cpu_only
def test_fused_index_check_raises_as_eager_even_where_the_gather_is_unused():
    def fn(x, t):
        g = x.gather(1, t[:, None])  # noqa: F841  # unused: eager still checks it
        return torch.logsumexp(x, -1)

    compiled = pdyn.optimize(fn, backend="triton")
    x, t = randn(4, 6), idx(6, 4)
    torch.testing.assert_close(compiled(x, t), fn(x, t))
    for bad in (t + 6, t - 7):
        with pytest.raises(RuntimeError):
            fn(x, bad)
        with pytest.raises(RuntimeError):
            compiled(x, bad)
    with pytest.raises(IndexError):
        pdyn.optimize(lambda x, t: F.cross_entropy(x, t, reduction="none"), backend="triton")(x, t + 6)
