"""The padding analysis on the patterns that kept whole models' batch from being padded (issue 15):
a batch read from two inputs and viewed as `mask.view(batch, -1)` (GPT-2), a `cat` along the last
dim (Llama's rotary halves), indexing with `arange(batch)` (the padding masks of Llama and BERT);
each beside its twin that must not be padded. Run on CPU: padded-then-sliced results are checked
equal to unpadded ones on every call (tests/backends/test_cudagraph_buckets.py's PaddingBackend)."""

from __future__ import annotations

import pytest
import torch

import pdyn
from pdyn.backends.cudagraphs.pad import padded_sizes
from tests.backends.test_cudagraph_buckets import PaddingBackend, run

pytest.importorskip("transformers")
from model_suite import cases  # noqa: E402  (needs transformers)
from model_suite.case import text_inputs  # noqa: E402

pytestmark = pytest.mark.filterwarnings("error::UserWarning")  # a padded run that raises would rerun eagerly, with a warning


def setup_function() -> None:
    pdyn.reset()


def two_inputs(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n, 6), (torch.arange(n * 6).reshape(n, 6) % 3 > 0).long()


def test_view_keeping_the_batch_of_a_second_input_is_padded() -> None:
    def f(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return x * mask.view(x.shape[0], -1)  # (b, -1) of a (b', s) mask: b' is b, the rest is s

    backend = run(f, two_inputs, {0: [0], 1: [0]})
    p = backend.plans[0]
    assert {"0.0", "1.0"} <= backend.padded()
    assert backend.padded_calls == 3
    assert set(p.ties.values()) == {next(iter(p.ties.values()))} and len(p.ties) == 2  # one group of two


def test_tied_batches_that_differ_run_unpadded() -> None:
    backend = run(lambda x, mask: x * mask.view(x.shape[0], -1), two_inputs, {0: [0], 1: [0]})
    p = backend.plans[0]
    x, mask = torch.randn(3, 6), torch.ones(5, 6).long()[:3]
    assert any(n != m for n, m in padded_sizes(p, [x, mask], None).values())  # equal batches: 3 -> 4
    mask6 = torch.ones(6, 3).long()  # a batch of 6 viewed as (3, -1): the tie does not hold
    assert all(n == m for n, m in padded_sizes(p, [x, mask6], None).values())


def test_view_that_merges_the_batch_is_not_padded() -> None:
    def f(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return x.reshape(-1)[:7] * mask.view(-1)[:7]

    backend = run(f, two_inputs, {0: [0], 1: [0]})
    assert not {"0.0", "1.0"} & backend.padded()


def test_cat_along_the_last_dim_pads_the_batch() -> None:
    def rotate(x: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1) * 2

    backend = run(rotate, lambda n: (torch.randn(n, 3, 8),), {0: [0]})
    assert "0.0" in backend.padded() and "0.2" not in backend.padded()


def test_cat_along_the_batch_is_not_padded() -> None:
    backend = run(lambda x: torch.cat((x, x * 2), dim=0), lambda n: (torch.randn(n, 8),), {0: [0]})
    assert "0.0" not in backend.padded()
    assert any("cat" in why for why in backend.plans[0].refused.values()), backend.plans[0].refused


def padding_mask(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Llama's and BERT's mask: mask[batch_idx, kv_idx] with aranges laid on their own dims."""
    b, s = x.shape
    rows = torch.arange(b)[:, None, None, None]
    cols = torch.arange(s)[None, None, None, :]
    return x[:, None, None, :] * mask.bool()[rows, cols]


def test_indexing_with_arange_of_the_batch_pads_it() -> None:
    backend = run(padding_mask, two_inputs, {0: [0], 1: [0]})
    assert {"0.0", "1.0"} <= backend.padded()
    assert backend.padded_calls == 3


def test_indexing_the_batch_with_data_is_not_padded() -> None:
    def f(x: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
        return x[order] * 2  # row i reads row order[i]: a padded row would read a real one

    backend = run(f, lambda n: (torch.randn(n, 4), torch.arange(n).flip(0)), {0: [0], 1: [0]})
    assert "0.0" not in backend.padded()


def test_indexing_the_batch_with_a_reversed_arange_is_not_padded() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        return x[b - 1 - torch.arange(b)] * 2

    backend = run(f, lambda n: (torch.randn(n, 4),), {0: [0]})
    assert "0.0" not in backend.padded()


def test_index_carrying_the_batch_into_another_dim_is_not_padded() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        rows = torch.arange(b)
        return x[rows, rows % x.shape[1]] * 2  # the batch's aranges index dim 1 too

    backend = run(f, lambda n: (torch.randn(n, 4),), {0: [0]})
    assert "0.0" not in backend.padded()


W = torch.randn(8, 12)
BIAS = torch.randn(12)


def conv1d(x: torch.Tensor) -> torch.Tensor:
    """GPT-2's Conv1D: rows of (batch*seq, h) through addmm, viewed back."""
    b, s, h = x.shape
    return torch.addmm(BIAS, x.view(-1, h), W).view(b, s, 12).relu()


def test_rows_merging_the_batch_outermost_are_padded() -> None:
    backend = run(conv1d, lambda n: (torch.randn(n, n + 1, 8),), {0: [0, 1]})
    assert "0.0" in backend.padded()
    assert "0.1" not in backend.padded()  # rows b*seq + t: a padded seq would move every later row
    assert backend.padded_calls == 3


def test_rows_merging_the_batch_inside_are_not_padded() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape  # (seq, batch) rows: padding the batch would move every row after the first seq
        return torch.addmm(BIAS, x.transpose(0, 1).reshape(-1, h), W).view(s, b, 12).transpose(0, 1)

    backend = run(f, lambda n: (torch.randn(n, n + 1, 8),), {0: [0, 1]})
    assert "0.0" not in backend.padded()


def test_reduction_over_merged_rows_is_not_padded() -> None:
    backend = run(lambda x: x.view(-1, x.shape[-1]).sum(0), lambda n: (torch.randn(n, 3, 8),), {0: [0]})
    assert "0.0" not in backend.padded()


def test_whole_models_pad_their_batch() -> None:
    """GPT-2, Llama and BERT of the model suite: the batch of input_ids and of attention_mask is one
    padded group, and padded-then-sliced logits equal unpadded ones."""
    for name in ("gpt2", "llama", "bert"):
        pdyn.reset()
        torch.manual_seed(0)
        model = getattr(cases, name)().eval()
        backend = PaddingBackend()
        compiled = pdyn.optimize(model.forward, backend=backend)
        with torch.no_grad():
            for b, s in [(3, 9), (5, 12), (6, 7)]:
                kwargs = text_inputs(b, s, seed=b) | ({"use_cache": False} if name != "bert" else {})
                torch.testing.assert_close(compiled(**kwargs)[0], model(**kwargs)[0])
        assert len(backend.plans) == 1 and {"0.0", "1.0"} <= backend.padded(), (name, backend.plans[0].refused)
        assert backend.padded_calls == 3
