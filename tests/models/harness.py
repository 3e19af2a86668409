"""The model suite's machinery: inputs with padded masks over a sequence of (batch, seq) shapes, a
comparison of model outputs (ModelOutput, tuples, caches, tensors) against eager with a tolerance,
and one run that counts graphs, breaks and compiles the way the suite asserts them.

A model is a `ModelCase`: how to build it (small config, random weights) and how to build the
keyword arguments of one call from (batch, seq, seed). `check_inference` runs the whole sequence
under `eval()` and `no_grad()`; `check_training_step` compares one forward + backward.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable

import torch

import pdyn
from tests.helpers import CountingBackend

# Batch sizes 1, 2, 3, 4, 7 and sequence lengths 7, 16, 33, 64. The first call is batch 2: the entry
# it compiles, which batch 1 shares (size-oblivious 0/1, docs/dynamic-shapes.md), is the one checked
# here; tests/models/test_batch_one_first.py starts at batch 1. (7, 7) checks that an entry compiled
# for unequal batch and seq still serves equal ones.
CALLS: list[tuple[int, int]] = [(2, 16), (3, 33), (1, 7), (4, 64), (7, 7), (2, 64), (1, 33), (3, 16), (4, 7),
                                (7, 64)]
VOCAB = 100
RTOL, ATOL = 1e-4, 1e-5


@dataclasses.dataclass
class ModelCase:
    name: str
    build: Callable[[], torch.nn.Module]                      # a fresh model, random weights
    inputs: Callable[[int, int, int], dict[str, Any]]         # (batch, seq, seed) -> forward's kwargs


def lengths(batch: int, seq: int) -> list[int]:
    """Each row's unpadded length: every row is padded by at least one position (so no call has an
    all-ones mask, which some models treat differently) and keeps at least half of `seq`."""
    return [seq - 1 - (row * 5) % max(seq // 2, 1) for row in range(batch)]


def padding_mask(batch: int, seq: int) -> torch.Tensor:
    """An attention mask in transformers' convention: 1 for a token, 0 for right padding (int64)."""
    mask = torch.zeros(batch, seq, dtype=torch.long)
    for row, n in enumerate(lengths(batch, seq)):
        mask[row, :n] = 1
    return mask


def token_ids(batch: int, seq: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(1, VOCAB, (batch, seq), generator=generator)


def text_inputs(batch: int, seq: int, seed: int) -> dict[str, Any]:
    """input_ids with pad id 0 where the mask is 0, and the mask."""
    mask = padding_mask(batch, seq)
    return {"input_ids": token_ids(batch, seq, seed) * mask, "attention_mask": mask}


def assert_close_outputs(actual: Any, expected: Any, path: str = "output") -> None:
    """Same Python types and structure (a ModelOutput's type and keys, a cache's layers), equal
    non-tensor values, tensors equal in dtype, shape, requires_grad and values within the tolerance."""
    assert type(actual) is type(expected), f"{path}: type {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, torch.Tensor):
        assert actual.dtype == expected.dtype, f"{path}: dtype {actual.dtype} != {expected.dtype}"
        assert actual.shape == expected.shape, f"{path}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
        assert actual.requires_grad == expected.requires_grad, f"{path}: requires_grad differs"
        torch.testing.assert_close(actual, expected, rtol=RTOL, atol=ATOL, equal_nan=True,
                                   msg=lambda m: f"{path}: {m}")
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close_outputs(a, e, f"{path}[{i}]")
    elif isinstance(expected, dict):  # ModelOutput is an OrderedDict: its keys are the fields set
        assert list(actual) == list(expected), f"{path}: keys {list(actual)} != {list(expected)}"
        for key in expected:
            assert_close_outputs(actual[key], expected[key], f"{path}[{key!r}]")
    elif isinstance(expected, (int, float, str, bool, type(None), type, torch.dtype, torch.device)):
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"
    elif hasattr(expected, "__dict__"):  # a cache object: its attributes, recursively
        assert_close_outputs(vars(actual), vars(expected), f"{path}.__dict__")
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


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
