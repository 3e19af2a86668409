"""Every model of the suite trains through pdyn's kernels as eager does: in train mode (dropout
on, the same seed), with labels where the model takes them, one forward and backward under
Triton's interpreter; the loss (or outputs) and every parameter's gradient equal eager's. GPT-2
and BERT (masked LM) are in test_autograd_training.py. On Llama and ViT the forward also saves
no more bytes than eager's (model_suite/saved_bytes.py; benchmarks/train_saved_bytes.py prints
the table). T5's and MultiheadAttention's graphs run with torch as a whole (an in-place op on an
intermediate): their gradients are eager's."""

from __future__ import annotations

import copy

import pytest
import torch

import pdyn
from tests.backends.autograd_util import TrainRecorder, weighted_loss
from model_suite.saved_bytes import saved_bytes
from model_suite.train_cases import TRAIN_CASES

TOLERANCE = {"rtol": 1e-3, "atol": 1e-4}
MODELS = ["llama", "vit", "t5", "bert", "distilbert", "multihead_attention", "transformer_encoder_layer"]
SAVED_AT_MOST_EAGER = {"llama", "vit"}
# every model trains on kernels: T5's `+=` and item assignments, MultiheadAttention's masked_fill_ of
# its padding mask become out-of-place ops (backends/autograd/writes.py)
ON_TORCH: set[str] = set()


@pytest.mark.parametrize("name", MODELS)
def test_training_step_gradients_match_eager(name):
    case = TRAIN_CASES[name]
    torch.manual_seed(0)
    model = case.build().train()
    eager = copy.deepcopy(model)
    kwargs = case.inputs(2, 6, 0)
    rec = TrainRecorder()
    compiled = pdyn.optimize(model, backend=rec)
    keep = list(model.parameters()) + [v for v in kwargs.values() if isinstance(v, torch.Tensor)]
    results = []
    for fn, params in ((compiled, keep), (eager, list(eager.parameters()) + keep[len(keep) - len(kwargs):])):
        torch.manual_seed(1)
        saved, out = saved_bytes(lambda: fn(**copy.deepcopy(kwargs)), params)
        loss = out.loss if case.labels else weighted_loss(out)
        loss.backward()
        results.append((saved, loss))
    torch.testing.assert_close(results[0][1], results[1][1], **TOLERANCE)
    for (label, p), q in zip(model.named_parameters(), eager.parameters()):
        assert (p.grad is None) == (q.grad is None), label
        if q.grad is not None:
            torch.testing.assert_close(p.grad, q.grad, **TOLERANCE, msg=lambda m: f"grad of {label}: {m}")
    if name not in ON_TORCH:
        assert any(getattr(c, "pdyn_joint", None) is not None for c in rec.compiled), "no graph trained on kernels"
        assert pdyn.stats()["graphs_on_torch"] == 0
    if name in SAVED_AT_MOST_EAGER:
        assert results[0][0].bytes <= results[1][0].bytes, (results[0][0].bytes, results[1][0].bytes)
