"""The eager check (backends/triton/eager_check.py) runs each node once on real tensors before it
is lowered; where no small sizes satisfy the trace's guards it runs at the example's own sizes,
so it must let go of each result once its last reader is lowered (ViT's training compile held a
whole forward's activations: 2.5x eager's peak)."""

from __future__ import annotations

import torch

from pdyn.backends.triton import eager_check
from tests.backends.util import check, randn


def test_results_are_dropped_after_their_last_reader_and_outputs_stay_eagers(monkeypatch):
    held: list[int] = []
    accepts = eager_check.EagerCheck.accepts

    def counting(self, node):
        held.append(len(self.results))
        return accepts(self, node)

    monkeypatch.setattr(eager_check.EagerCheck, "accepts", counting)

    def chain(x):
        if x.shape[0] > 8:  # a guard no small size satisfies: the check runs at the example's sizes
            x = x * 2
        for _ in range(12):
            x = torch.sin(x) * 1.5 + 0.25   # each value read only by the next op
        return x.t().contiguous() + 1

    check(chain, (randn(10, 4),))
    assert len(held) >= 36 and max(held) <= 3, held
