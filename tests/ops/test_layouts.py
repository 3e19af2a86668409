"""pdyn/ops/layouts.py claims a traced tensor contiguous at every size: each claim checked against
eager's tensors at other sizes (the graph traced at size 1, run by fx at 1, 2 and 5)."""

from __future__ import annotations

import torch
import torch.fx
import torch.nn.functional as F

import pdyn
from pdyn.ops.layouts import KEY, contiguous_always
from tests.helpers import CountingBackend

W = torch.randn(4, 6)


def program(x, sizes):
    h = F.layer_norm(x @ W, (6,)) + 1                     # fresh, then follows
    parts = h.view(-1, 6).split(sizes)                    # pieces along dim 0
    t = h.transpose(0, 1) * 2                             # not contiguous at size > 1
    s = torch.softmax(h.sum(-1, keepdim=True), 0)
    return [p.view(-1) for p in parts] + [t, t.contiguous().view(-1), s, h[1:], h.narrow(0, 0, 1),
                                          h.chunk(2)[0], x.unsqueeze(1).squeeze(1), F.embedding(x.long().abs() % 4, W)]


def _claims(batch: int) -> tuple[torch.fx.GraphModule, dict[str, bool]]:
    backend = CountingBackend()
    pdyn.optimize(program, backend=backend)(torch.randn(batch, 3, 4), [batch, 2 * batch])
    gm = backend.graphs[0]
    claims = {}
    for node in gm.graph.nodes:
        node.meta.pop(KEY, None)
        claims[node.name] = contiguous_always(node)
    return gm, claims


class _Recorder(torch.fx.Interpreter):
    def __init__(self, gm: torch.fx.GraphModule) -> None:
        super().__init__(gm)
        self.values: dict[str, object] = {}

    def run_node(self, n: torch.fx.Node) -> object:
        out = super().run_node(n)
        self.values[n.name] = out
        return out


def test_every_claim_holds_at_other_sizes():
    gm, claims = _claims(1)
    assert claims["layer_norm"] and not claims["mul"], claims   # h; the transposed product
    assert sum(claims.values()) >= 10, claims
    for batch in (1, 2, 5):
        recorder = _Recorder(gm)
        inputs = {"x": torch.randn(batch, 3, 4), "sizes_0": batch, "sizes_1": 2 * batch, "g_w": W}
        recorder.run(*[inputs[n.name] for n in gm.graph.nodes if n.op == "placeholder"])
        for name, claimed in claims.items():
            value = recorder.values.get(name)
            if claimed and isinstance(value, torch.Tensor):
                assert value.is_contiguous(), f"{name} at batch {batch}: strides {value.stride()}"
