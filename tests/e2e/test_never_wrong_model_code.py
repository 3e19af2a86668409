"""torch.nn building blocks as model code uses them, where pdyn must agree with eager and say
honestly what it captured: an op FakeTensor can only run by falling back to its real kernel on
zeros, and the nested tensors of torch's Transformer fast path."""

from __future__ import annotations

import copy
import warnings

import torch

import pdyn
from tests.helpers import CountingBackend, assert_same


def _padded_rows(x, pad):
    """TransformerEncoder's fast path: padded rows dropped into a nested tensor, padded back."""
    y = x * 2
    nested = torch._nested_tensor_from_mask(y, pad.logical_not(), mask_check=False)
    return nested.to_padded_tensor(0.0, y.size()) + 1


def _pad_mask(batch, seq):
    pad = torch.zeros(batch, seq, dtype=torch.bool)
    pad[0, -1] = True
    return pad


def test_an_op_whose_fake_fallback_fails_breaks_the_graph_instead_of_passing_for_the_users_error():
    # FakeTensor runs _nested_tensor_from_mask's real kernel on zeros and cannot make the nested
    # result fake; that failure was taken for the op's own error: the frame ran eagerly, uncounted
    backend = CountingBackend()
    opt = pdyn.optimize(_padded_rows, backend=backend)
    for batch, seq in ((2, 5), (3, 7)):
        x, pad = torch.randn(batch, seq, 4), _pad_mask(batch, seq)
        assert_same(opt(x, pad), _padded_rows(x, pad))
    stats = pdyn.stats()
    # the graph before the op; its resume function takes a nested tensor and runs eagerly
    assert (stats["graph_breaks"], stats["eager_fallbacks"], stats["frames_without_graph"]) == (1, 1, 2), stats
    assert len(backend.graphs) == 1 and stats["ops_captured"] == 2, stats   # x * 2, logical_not
    report = pdyn.explain(_padded_rows)(x, pad)
    assert [r.key for r in report.break_reasons] == ["fake_unsupported", "tensor_subclass"], report


def test_transformer_encoder_with_nested_tensor_fast_path_equals_eager():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 2, mask_check=False).eval()
    eager = copy.deepcopy(model)
    opt = pdyn.optimize(model, backend=CountingBackend())
    with torch.no_grad():
        for batch, seq in ((2, 5), (3, 7), (4, 9)):
            x, pad = torch.randn(batch, seq, 16), _pad_mask(batch, seq)
            assert_same(opt(x, src_key_padding_mask=pad), eager(x, src_key_padding_mask=pad))
    stats = pdyn.stats()
    assert stats["graphs"] >= 1 and stats["graph_breaks"] >= 1, stats   # the masks' graph, then the break


def test_multihead_attention_fast_path_without_weights_returns_none_weights_in_the_trace():
    # the fused kernel's fake returns an empty tensor where the real one returns None: the trace
    # took `weights is None` as False, and the rule's mismatch specialized every size
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(16, 2, batch_first=True).eval()

    def attend(x, pad):
        out, weights = mha(x, x, x, key_padding_mask=pad, need_weights=False)
        return out + 1 if weights is None else out * 0

    backend = CountingBackend()
    opt = pdyn.optimize(attend, backend=backend)
    with torch.no_grad():
        for batch, seq in ((2, 5), (3, 7), (4, 9), (2, 6)):
            x, pad = torch.randn(batch, seq, 16), _pad_mask(batch, seq)
            assert_same(opt(x, pad), attend(x, pad))
    stats = pdyn.stats()
    assert (stats["compiles"], stats["graph_breaks"], stats["eager_fallbacks"]) == (1, 0, 0), stats


def test_torch_functions_that_call_vf_builtins_run_as_traced_in_the_graph():
    # torch.broadcast_tensors and torch.cdist call torch._VF's builtins of the same name, which fx
    # prints as `torch.<name>`: the Python wrapper, which takes other arguments
    def f(x, y):
        a, b = torch.broadcast_tensors(x, y[:1])
        return torch.cdist(a + b, y), torch.einsum("ij,kj->ik", x, y)

    backend = CountingBackend()
    opt = pdyn.optimize(f, backend=backend)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no "invariant broke" rerun
        for rows in (3, 5, 6):
            x, y = torch.randn(rows, 4), torch.randn(rows + 1, 4)
            assert_same(opt(x, y), f(x, y))
    stats = pdyn.stats()
    assert (stats["graphs"], stats["graph_breaks"], stats["eager_fallbacks"]) == (1, 0, 0), stats
