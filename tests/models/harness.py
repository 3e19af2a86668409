"""The model suite's checks: one run that counts graphs, breaks and compiles the way the suite
asserts them, over the cases and inputs of `model_suite/` (shared with benchmarks/models.py). `check_inference` runs the whole sequence
under `eval()` and `no_grad()`; `check_training_step` compares one forward + backward.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import torch

import pdyn
from model_suite.case import ATOL, CALLS, RTOL, ModelCase, assert_close_outputs
from tests.helpers import CountingBackend


def first_breaks(model: torch.nn.Module, kwargs: dict[str, Any], limit: int = 3) -> str:
    """The first reasons pdyn breaks or falls back on this call (for a failure message), on a model
    that is not the one under test; under no_grad unless the model is in train mode."""
    with torch.set_grad_enabled(model.training):
        try:
            report = pdyn.explain(model)(**kwargs)
        except Exception as e:  # the message is a diagnosis; the test has already failed
            return f"explain raised {e!r}"
    return "; ".join(f"{r.reason} [{r.key}] at {r.filename.split('site-packages/')[-1]}:{r.lineno}"
                     for r in report.break_reasons[:limit]) or "no break reported"


@dataclasses.dataclass
class Report:
    first_graphs: int
    first_breaks: int
    first_fallbacks: int
    compiles: int


def run_inference(case: ModelCase, calls: list[tuple[int, int]] = CALLS) -> Report:
    """Every call compared with eager (a deep copy with the same weights); counts of the first call
    and compiles over the whole sequence, from a fresh pdyn state."""
    pdyn.reset()
    torch.manual_seed(0)
    model = case.build().eval()
    eager = copy.deepcopy(model)
    backend = CountingBackend()
    optimized = pdyn.optimize(model, backend=backend)
    first = None
    for number, (batch, seq) in enumerate(calls):
        kwargs = case.inputs(batch, seq, number)
        with torch.no_grad():
            expected = eager(**copy.deepcopy(kwargs))
            actual = optimized(**copy.deepcopy(kwargs))
        assert_close_outputs(actual, expected, f"call {number} (batch {batch}, seq {seq})")
        if first is None:
            stats = pdyn.stats()
            first = (len(backend.graphs), stats["graph_breaks"], stats["eager_fallbacks"])
    assert first is not None
    return Report(*first, pdyn.stats()["compiles"])


def check_inference(case: ModelCase, compiles: int = 1, calls: list[tuple[int, int]] = CALLS) -> None:
    """The suite's assertions on one model: outputs equal eager on every call; the first call is one
    graph with no break and no eager fallback; `fullgraph=True` compiles it and agrees; `compiles`
    compiles over the whole sequence."""
    report = run_inference(case, calls)
    batch, seq = calls[0]
    first_kwargs = case.inputs(batch, seq, 0)
    assert (report.first_graphs, report.first_breaks, report.first_fallbacks) == (1, 0, 0), \
        f"first call: {report.first_graphs} graphs, {report.first_breaks} breaks, {report.first_fallbacks} eager " \
        f"fallbacks; breaks: {first_breaks(case.build(), first_kwargs)}"
    check_fullgraph(case, first_kwargs)
    assert report.compiles == compiles, f"{report.compiles} compiles over {len(calls)} calls, expected {compiles}"


def check_fullgraph(case: ModelCase, kwargs: dict[str, Any]) -> None:
    pdyn.reset()
    torch.manual_seed(0)
    model = case.build().eval()
    eager = copy.deepcopy(model)
    optimized = pdyn.optimize(model, backend="eager", fullgraph=True)
    with torch.no_grad():
        expected = eager(**copy.deepcopy(kwargs))
        actual = optimized(**copy.deepcopy(kwargs))
    assert_close_outputs(actual, expected, "fullgraph call")


def check_training_step(case: ModelCase, batch: int = 3, seq: int = 16) -> None:
    """One forward with labels and a backward in train mode (dropout on, same seed for both):
    the loss, the outputs and every parameter's gradient equal eager's; one graph, no break."""
    pdyn.reset()
    torch.manual_seed(0)
    model = case.build().train()
    eager = copy.deepcopy(model)
    backend = CountingBackend()
    optimized = pdyn.optimize(model, backend=backend)
    kwargs = case.inputs(batch, seq, 0)
    torch.manual_seed(1)
    expected = eager(**copy.deepcopy(kwargs))
    expected.loss.backward()
    torch.manual_seed(1)
    actual = optimized(**copy.deepcopy(kwargs))
    actual.loss.backward()
    assert_close_outputs(actual, expected, "training output")
    grads = dict(model.named_parameters())
    for name, param in eager.named_parameters():
        got = grads[name].grad
        if param.grad is None:
            assert got is None, f"{name}: pdyn has a gradient, eager has none"
            continue
        assert got is not None, f"{name}: no gradient under pdyn"
        torch.testing.assert_close(got, param.grad, rtol=RTOL, atol=ATOL, msg=lambda m: f"grad of {name}: {m}")
    stats = pdyn.stats()
    counts = (len(backend.graphs), stats["graph_breaks"], stats["eager_fallbacks"])
    assert counts == (1, 0, 0), f"training step: {counts[0]} graphs, {counts[1]} breaks, {counts[2]} eager " \
                                f"fallbacks; breaks: {first_breaks(case.build().train(), kwargs)}"
