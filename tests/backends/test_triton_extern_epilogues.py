"""What runs around the extern calls of matrix products and attention: a bias goes to cuBLAS where
no kernel after the product could take it, views of extern results are direct method calls, and
attention gets a mask the GPU's fused kernels accept."""

import torch
import torch.nn.functional as F

from pdyn.backends.triton.runtime import torch_calls
from tests.backends.util import DEVICE, check


def randn(*shape):
    return torch.randn(*shape, device=DEVICE)


def projections(x, w, b):
    q = F.linear(x, w, b).view(x.shape[0], x.shape[1], 2, 4).transpose(1, 2)
    o = F.scaled_dot_product_attention(q, q, q)
    return o.transpose(1, 2).reshape(x.shape[0], x.shape[1], 8)


def test_a_bias_that_no_kernel_could_take_is_added_by_the_matrix_product():
    w, b = randn(8, 8), randn(8)
    rec = check(projections, (randn(2, 5, 8), w, b), (randn(3, 7, 8), w, b), kernels=0)
    source = rec.last.wrapper_source
    assert "kernel" not in source.split("def call", 1)[1]  # no bias-add kernel, no copy
    assert ".view(s0, s1, 2, 4)" in source and ".transpose(1, 2)" in source  # views called directly


def test_a_bias_before_a_pointwise_op_fuses_into_its_kernel():
    w, b = randn(8, 8), randn(8)
    rec = check(lambda x, w, b: F.gelu(F.linear(x, w, b)), (randn(2, 5, 8), w, b), (randn(3, 7, 8), w, b), kernels=1)
    assert "extern: linear" in rec.last.wrapper_source


def test_attention_makes_a_broadcast_mask_dense_on_the_gpu_only(monkeypatch):
    seen = []
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda q, k, v, mask, *a, **kw: seen.append(mask.stride()) or q)
    q = torch.randn(2, 2, 5, 4)
    mask = (torch.rand(5, 1) > 0.5).expand(2, 1, 5, 5)  # stride 0 along the keys
    torch_calls.scaled_dot_product_attention(q, q, q, mask)
    assert seen == [mask.stride()]  # the CPU kernels take it as it is
    if torch.cuda.is_available():
        torch_calls.scaled_dot_product_attention(q.cuda(), q.cuda(), q.cuda(), mask.cuda())
        assert seen[-1][-1] == 1
