"""A training graph's backward graphs are compiled at the first backward that needs them
(backends/autograd/function.py): a loss-only backward compiles its variant and never the full
backward; each compiled backward is counted when it is compiled (`backward_graphs`, `kernels`),
and a backward graph that fails to compile runs with torch, counted, with eager's gradients."""

from __future__ import annotations

import torch

import pdyn
from tests.backends.autograd_util import TOLERANCE, TrainRecorder


def two_outputs(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    logits = torch.tanh(x @ w)
    return logits.pow(2).mean(), logits


def _leaves() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return torch.randn(4, 6), torch.randn(6, 5, requires_grad=True)


def _eager_grad(which: str) -> torch.Tensor:
    x, w = _leaves()
    loss, logits = two_outputs(x, w)
    (loss if which == "loss" else loss + logits.sum()).backward()
    return w.grad


def test_a_loss_only_backward_compiles_its_variant_alone_and_counts_it_when_compiled():
    rec = TrainRecorder()
    f = pdyn.optimize(two_outputs, backend=rec)
    x, w = _leaves()
    loss, logits = f(x, w)
    before = pdyn.stats(f)
    assert before["backward_graphs"] == 0 and before["kernels"] > 0   # the forward's kernels only
    loss.backward()
    torch.testing.assert_close(w.grad, _eager_grad("loss"), **TOLERANCE)
    after = pdyn.stats(f)
    step = rec.compiled[-1].pdyn_step
    assert step.backward is None and len(step.variants) == 1           # the full backward was never built
    assert after["backward_graphs"] == 1 and after["kernels"] > before["kernels"]
    w.grad = None
    loss, logits = f(x, w)
    (loss + logits.sum()).backward()                                   # every output gets a gradient now
    torch.testing.assert_close(w.grad, _eager_grad("both"), **TOLERANCE)
    assert step.backward is not None and rec.compiled[-1].pdyn_backward is not None
    assert pdyn.stats(f)["backward_graphs"] == 2 and pdyn.stats(f)["compiles"] == 1
    assert pdyn.stats(f)["graphs_on_torch"] == 0


def test_a_backward_graph_that_fails_to_compile_runs_with_torch_and_is_counted():
    rec = TrainRecorder()
    f = pdyn.optimize(two_outputs, backend=rec)
    x, w = _leaves()
    loss, logits = f(x, w)

    def fails(graph: torch.fx.GraphModule) -> None:
        raise RuntimeError("planted: no kernels for this backward")

    rec.compiled[-1].pdyn_step.lower = fails
    (loss + logits.sum()).backward()
    torch.testing.assert_close(w.grad, _eager_grad("both"), **TOLERANCE)
    stats = pdyn.stats(f)
    assert stats["backward_graphs"] == 1 and stats["graphs_on_torch"] == 1
