"""transformers' `generate()` under pdyn: the decoding loop's model forward compiled once for the
prompt and once for the one-token steps, and `generate` itself optimized whole, its Python
(logits-processor and stopping-criteria lists, signature checks, set arithmetic, its
@contextmanager decode block) traced: no frame runs eagerly."""

import pytest
import torch

import pdyn

transformers = pytest.importorskip("transformers")


def _model():
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=64,
                                     bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return transformers.GPT2LMHeadModel(config).eval()


PROMPTS = [(2, 5), (3, 7), (4, 4)]   # batch 1 would be specialized, as torch.compile does


def _prompt(batch, length):
    return torch.randint(3, 64, (batch, length), generator=torch.Generator().manual_seed(batch * 100 + length))


@torch.no_grad()
def test_generate_with_an_optimized_forward_compiles_prefill_and_decode_once_each():
    model = _model()
    expected = [model.generate(_prompt(*p), max_new_tokens=5, do_sample=False) for p in PROMPTS]
    model.forward = pdyn.optimize(model.forward)
    for prompt, want in zip(PROMPTS, expected):
        assert torch.equal(model.generate(_prompt(*prompt), max_new_tokens=5, do_sample=False), want)
    stats = pdyn.stats(model.forward)
    assert stats["graph_breaks"] == 0 and stats["eager_fallbacks"] == 0, stats
    assert stats["compiles"] == 2, stats   # the prompt, then every one-token step, at every size


@torch.no_grad()
def test_generate_optimized_whole_equals_eager_and_every_frame_has_a_graph_or_resumes():
    model = _model()
    expected = [model.generate(_prompt(*p), max_new_tokens=4, do_sample=False) for p in PROMPTS[:2]]
    explained = pdyn.explain(model.generate)(_prompt(*PROMPTS[0]), max_new_tokens=4, do_sample=False)
    generate = pdyn.optimize(model.generate)
    for prompt, want in zip(PROMPTS[:2], expected):
        assert torch.equal(generate(_prompt(*prompt), max_new_tokens=4, do_sample=False), want)
    assert not [f for f in explained.frames if f.eager], explained   # every frame has a graph or resumes
    assert explained.ops_captured > 100   # the decoding loop's model forward is in a resume function's graph
