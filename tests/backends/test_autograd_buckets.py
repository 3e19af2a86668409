"""Training graphs cut at DDP's gradient buckets (backends/autograd/buckets.py), without processes:
the DDP whose forward runs is stood in for, so the cut is seen on its own. Every piece trains on
kernels and the gradients are eager's, where values crossing a cut are transposed views, items of
a tuple result, sizes, and a parameter read by the first and the last piece (a tied head), with a
dropout drawing as eager's and an output no gradient reaches."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

import pdyn
from pdyn.backends.autograd import buckets
from tests.backends.autograd_util import TOLERANCE, TrainRecorder

PARAM_BYTES = 8 * 8 * 4


class Tied(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tied = torch.nn.Parameter(torch.randn(8, 8) / 3)
        self.w = torch.nn.ParameterList(torch.nn.Parameter(torch.randn(8, 8) / 3) for _ in range(3))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, int, torch.Tensor, torch.Tensor]:
        h = x @ self.tied
        a, b = (h @ self.w[0]).chunk(2, dim=-1)        # a tuple result; its items cross a cut
        h = torch.cat([b, a], -1).t()                  # a transposed view crosses
        h = torch.nn.functional.dropout((self.w[1] @ h).t().relu(), 0.3, training=self.training)
        n = h.shape[0] * 2                             # a size read after the cut
        h = torch.tanh(h @ self.w[2] + x[:, :1]) @ self.tied.t()  # the tied parameter, read again; an input indexed
        return h.sum() / n, n, x, h                    # h gets no gradient: a backward variant


def _train(model: torch.nn.Module, shapes: list[tuple[int, int]]) -> tuple[list[torch.Tensor], TrainRecorder]:
    rec = TrainRecorder()
    compiled = pdyn.optimize(model, backend=rec)
    ref = Tied()
    ref.load_state_dict(model.state_dict())
    for shape in shapes:
        x = torch.randn(*shape)
        torch.manual_seed(len(shape) * 10 + shape[0])
        out = compiled(x)
        torch.manual_seed(len(shape) * 10 + shape[0])
        want = ref(x)
        assert out[1] == want[1] and out[2] is x
        torch.testing.assert_close(out[0], want[0], **TOLERANCE)
        torch.testing.assert_close(out[3], want[3], **TOLERANCE)   # the same dropout mask
        out[0].backward()
        want[0].backward()
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad, q.grad, **TOLERANCE, msg=name)
            p.grad = q.grad = None
    return [model], rec


@pytest.mark.parametrize("cap,pieces", [(PARAM_BYTES, 4), (2 * PARAM_BYTES, 2), (100 * PARAM_BYTES, 1)])
def test_a_graph_is_cut_where_its_parameters_fill_a_bucket_and_trains_as_eager(monkeypatch, cap, pieces):
    monkeypatch.setattr(buckets, "active_ddp", lambda: SimpleNamespace(bucket_bytes_cap=cap,
                                                                      bucket_bytes_cap_default=False))
    torch.manual_seed(0)
    (model,), rec = _train(Tied(), [(3, 8), (5, 8), (2, 8)])
    stats = pdyn.stats(model)
    compiles = stats["compiles"]
    assert stats["graphs_on_torch"] == 0 and stats["graph_breaks"] == 0
    assert stats["backward_graphs"] == pieces * compiles
    cut = [getattr(c, "pdyn_pieces", None) for c in rec.compiled]
    assert all((len(c) if c else 1) == pieces for c in cut)
    if pieces > 1:  # the tied parameter is read by the first piece and the last
        for piece in (cut[0][0], cut[0][-1]):
            assert any("tied" in n.name for n in piece.gm.graph.nodes if n.op == "placeholder")


def test_outside_a_ddp_forward_a_graph_is_not_cut():
    torch.manual_seed(0)
    (model,), rec = _train(Tied(), [(3, 8), (5, 8)])
    assert all(getattr(c, "pdyn_pieces", None) is None for c in rec.compiled)
    assert pdyn.stats(model)["backward_graphs"] == pdyn.stats(model)["compiles"]
