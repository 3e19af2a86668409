"""Reductions and the normalizations built from them, against eager; fused kernel counts."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.backends.util import DEVICE, check, randn

REDUCTIONS = {
    "sum_last": lambda x: x.sum(-1), "sum_first": lambda x: x.sum(0),
    "sum_keepdim": lambda x: x.sum(1, keepdim=True), "sum_all": lambda x: x.sum(),
    "sum_dims": lambda x: x.sum((0, 2)), "mean": lambda x: x.mean(-1), "mean_all": lambda x: x.mean(),
    "amax": lambda x: x.amax(1), "amin": lambda x: x.amin(0), "prod": lambda x: x.prod(-1),
    "argmax": lambda x: x.argmax(-1), "argmin": lambda x: x.argmin(1), "argmax_all": lambda x: x.argmax(),
    "var": lambda x: x.var(-1), "var_dims": lambda x: x.var((0, 1), correction=0),
    "std": lambda x: x.std(0), "max_dim": lambda x: x.max(1), "min_dim_keep": lambda x: x.min(-1, keepdim=True),
    "var_mean": lambda x: torch.var_mean(x, -1),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_matches_eager_across_sizes(name):
    check(REDUCTIONS[name], (randn(3, 5, 4),), (randn(4, 7, 4),))


def test_sum_of_bool_is_int64():
    check(lambda x: (x > 0).sum(-1), (randn(3, 6),), (randn(5, 6),))


def test_argmax_picks_the_first_of_equal_values():
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    check(lambda x: (x.argmax(-1), x.argmin(-1)), (x,), compiles=None)


def test_long_rows_use_the_looped_kernel():
    """Rows longer than one persistent block run the looped variant: same kernel, no recompile."""
    check(lambda x: torch.softmax(x, -1), (randn(2, 40),), (randn(2, 5000),), kernels=1)


def test_softmax_and_log_softmax_are_one_kernel():
    check(lambda x: torch.softmax(x * 2, -1), (randn(4, 6),), (randn(5, 9),), kernels=1)
    check(lambda x: F.log_softmax(x, dim=0), (randn(4, 6),), (randn(5, 9),), kernels=1)


def test_layer_norm_is_one_kernel():
    def ln(x, w, b):
        return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)

    check(ln, (randn(4, 16), randn(16), randn(16)), (randn(7, 16), randn(16), randn(16)), kernels=1)


def test_layer_norm_without_affine_over_two_dims():
    check(lambda x: F.layer_norm(x, x.shape[-2:]), (randn(2, 3, 4),), (randn(5, 3, 4),))


def test_rms_norm_is_one_kernel():
    check(lambda x, w: F.rms_norm(x, (8,), w, 1e-6), (randn(3, 8), randn(8)), (randn(6, 8), randn(8)),
          kernels=1)


def test_reduction_epilogue_fuses_with_broadcast_back():
    check(lambda x: x - x.mean(-1, keepdim=True), (randn(4, 6),), (randn(5, 6),), kernels=1)


def test_column_sum_with_pointwise_prologue_is_one_kernel():
    check(lambda x: (x * x + 1).sum(0), (randn(9, 6),), (randn(13, 6),), kernels=1)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_norms(dtype):
    check(lambda x: (torch.softmax(x, -1), F.layer_norm(x, (8,))), (randn(4, 8, dtype=dtype),),
          (randn(6, 8, dtype=dtype),))


def test_linear_bias_gelu_is_extern_plus_one_kernel():
    rec = check(lambda x, w, b: F.gelu(F.linear(x, w, b)), (randn(4, 6), randn(5, 6), randn(5)),
                (randn(7, 6), randn(5, 6), randn(5)), kernels=1)
    assert "extern: linear" in rec.last.wrapper_source


def test_matmul_family_against_eager():
    check(lambda a, b: torch.relu(a @ b) + 1, (randn(4, 6), randn(6, 3)), (randn(7, 6), randn(6, 3)))
    check(lambda a, b: torch.bmm(a, b) * 2, (randn(2, 4, 6), randn(2, 6, 3)), (randn(3, 4, 6), randn(3, 6, 3)))
    check(lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), (randn(3), randn(4, 6), randn(6, 3)),
          (randn(3), randn(5, 6), randn(6, 3)))


def test_mlp_block_matches_eager():
    def block(x, w1, b1, w2, b2, g, beta):
        h = F.layer_norm(x, (x.shape[-1],), g, beta)
        h = F.gelu(F.linear(h, w1, b1))
        return x + F.linear(h, w2, b2)

    params = (randn(16, 8), randn(16), randn(8, 16), randn(8), randn(8), randn(8))
    rec = check(block, (randn(3, 8), *params), (randn(5, 8), *params))
    # layernorm, bias+gelu, bias+residual: three kernels around two extern matmuls
    assert rec.last.kernel_count == 3


class PostNorm(torch.nn.Module):
    """BERT's residual stream: a norm's output feeds the next matmul and the next residual add."""

    def __init__(self, h: int) -> None:
        super().__init__()
        self.fc, self.norm = torch.nn.Linear(h, h), torch.nn.LayerNorm(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + torch.relu(self.fc(x)))


def test_a_value_stored_for_a_matmul_is_read_not_recomputed_by_later_layers():
    """Each layer's kernel reads the previous norm's stored output: the kernels of layers 2..n are
    one source, not a chain that grows by a layer's ops with every layer (quadratic work)."""
    def sources(layers: int) -> list[str]:
        torch.manual_seed(0)
        model = torch.nn.Sequential(*[PostNorm(16) for _ in range(layers)]).to(DEVICE).eval()
        with torch.no_grad():
            rec = check(lambda x: model(x), (randn(5, 16),), (randn(7, 16),))
        return [s.split("\n", 1)[1] for s in rec.last.kernel_sources]

    three, six = sources(3), sources(6)
    assert len(set(six)) == len(set(three))
    assert max(s.count("tl.load") for s in six) == max(s.count("tl.load") for s in three)
