"""The suite's harness: it passes on a small model pdyn captures, and its comparison catches what
it must (wrong types, keys, values, caches)."""

from collections import OrderedDict

import pytest
import torch
import torch.nn.functional as F

from model_suite.case import CALLS, ModelCase, assert_close_outputs, lengths, padding_mask, text_inputs
from tests.models.harness import check_inference


class TinyEncoder(torch.nn.Module):
    """Embedding, a masked softmax attention and a masked mean: the shape of a text model's forward."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(100, 16)
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, input_ids, attention_mask):
        h = self.embed(input_ids)
        scores = (h @ self.proj(h).transpose(1, 2)) / 4.0
        scores = scores.masked_fill(attention_mask[:, None, :] == 0, float("-inf"))
        h = F.softmax(scores, dim=-1) @ h
        keep = attention_mask.unsqueeze(-1).to(h.dtype)
        return h, (h * keep).sum(1) / keep.sum(1)


def test_calls_cover_every_batch_size_and_sequence_length():
    assert {b for b, _ in CALLS} == {1, 2, 3, 4, 7} and {s for _, s in CALLS} == {7, 16, 33, 64}
    assert CALLS[0][0] != 1  # the first entry compiled is the dynamic one


def test_every_row_is_padded_and_keeps_half():
    for batch, seq in CALLS:
        mask = padding_mask(batch, seq)
        assert mask.tolist() == [[1] * n + [0] * (seq - n) for n in lengths(batch, seq)]
        assert all(seq // 2 <= n < seq for n in lengths(batch, seq))
    inputs = text_inputs(3, 16, 0)
    assert (inputs["input_ids"][inputs["attention_mask"] == 0] == 0).all()


def test_check_inference_passes_on_a_captured_model():
    check_inference(ModelCase("tiny", TinyEncoder, text_inputs))


def test_comparison_checks_output_types_keys_and_values():
    class Output(OrderedDict):  # as transformers' ModelOutput
        pass

    t = torch.ones(2)
    assert_close_outputs(Output(a=t, b=(t, None)), Output(a=t.clone(), b=(t.clone(), None)))
    with pytest.raises(AssertionError, match="type"):
        assert_close_outputs(OrderedDict(a=t), Output(a=t))
    with pytest.raises(AssertionError, match="keys"):
        assert_close_outputs(Output(a=t), Output(a=t, b=t))
    with pytest.raises(AssertionError, match="output\\['a'\\]"):
        assert_close_outputs(Output(a=t), Output(a=t + 1e-3))

    class Cache:
        def __init__(self, keys):
            self.keys = keys

    with pytest.raises(AssertionError, match="__dict__"):
        assert_close_outputs(Cache([t]), Cache([t + 1]))
