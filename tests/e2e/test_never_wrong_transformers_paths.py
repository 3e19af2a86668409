"""transformers code paths beyond the model suite's inference sequence: losses and training steps
with changing batch and sequence, and the ops they reach (`x[..., 1:] = y` in T5's
`_shift_right`, `binary_cross_entropy_with_logits` in multi-label classification heads). Each is
equal to eager on every call and keeps its sizes symbolic (no value read, no break)."""

import copy

import pytest
import torch

import pdyn

SHAPES = [(2, 8), (3, 5), (4, 9)]


def _counts(fn):
    s = pdyn.stats(fn)
    return s["graph_breaks"], s["eager_fallbacks"], s["compiles"]


def test_setitem_with_ellipsis_and_broadcast_value_keeps_sizes_dynamic():
    def f(x, row):
        y = x.new_zeros(x.shape)
        y[..., 1:] = x[..., :-1].clone()
        y[..., 0] = 5
        y[:, -1:] = row   # (1, 1) broadcast over the batch
        return y

    opt = pdyn.optimize(f)
    for b, s in SHAPES:
        x, row = torch.randint(0, 9, (b, s)), torch.full((1, 1), 7)
        assert torch.equal(opt(x, row), f(x, row))
    breaks, fallbacks, compiles = _counts(opt)
    assert (breaks, fallbacks) == (0, 0) and compiles <= 2, _counts(opt)


def test_setitem_int_index_out_of_range_on_a_later_call_raises_as_eager():
    def f(x):
        y = x.clone()
        y[:, 5] = 0
        return y

    opt = pdyn.optimize(f)
    for b, s in [(2, 8), (3, 9)]:
        x = torch.randn(b, s)
        assert torch.equal(opt(x), f(x))
    with pytest.raises(IndexError) as want:
        f(torch.randn(2, 4))
    with pytest.raises(IndexError) as got:
        opt(torch.randn(2, 4))
    assert str(got.value) == str(want.value)


def test_setitem_value_that_does_not_broadcast_raises_as_eager():
    def f(x, v):
        y = x.clone()
        y[:, 1:] = v
        return y

    opt = pdyn.optimize(f)
    for b, s in [(2, 8), (3, 9)]:
        x, v = torch.randn(b, s), torch.randn(b, s - 1)
        assert torch.equal(opt(x, v), f(x, v))
    x, v = torch.randn(3, 6), torch.randn(3, 4)
    with pytest.raises(RuntimeError):
        f(x, v)
    with pytest.raises(RuntimeError):
        opt(x, v)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_with_logits_keeps_sizes_dynamic(reduction):
    def f(x, t, w):
        return torch.nn.functional.binary_cross_entropy_with_logits(x, t, pos_weight=w, reduction=reduction)

    opt = pdyn.optimize(f)
    for b, s in SHAPES:
        g = torch.Generator().manual_seed(b * s)
        x, t, w = torch.randn(b, s, generator=g), torch.rand(b, s, generator=g), torch.rand(s, generator=g)
        torch.testing.assert_close(opt(x, t, w), f(x, t, w))
    breaks, fallbacks, compiles = _counts(opt)
    assert (breaks, fallbacks) == (0, 0) and compiles <= 2, _counts(opt)


def _train_steps(model, make):
    """Forward with labels and backward, against eager: loss, logits and every grad, per call."""
    torch.manual_seed(0)
    model.train()
    eager = copy.deepcopy(model)
    opt = pdyn.optimize(model)
    for i, (b, s) in enumerate(SHAPES):
        kwargs = make(b, s, i)
        want, got = eager(**copy.deepcopy(kwargs)), opt(**copy.deepcopy(kwargs))
        torch.testing.assert_close(got.loss, want.loss)
        torch.testing.assert_close(got.logits, want.logits)
        want.loss.backward()
        got.loss.backward()
        for (name, p), q in zip(eager.named_parameters(), model.parameters()):
            assert (p.grad is None) == (q.grad is None), name
            if p.grad is not None:
                torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5)
        eager.zero_grad()
        model.zero_grad()
    return opt


def _ids(b, s, seed):
    return torch.randint(1, 100, (b, s), generator=torch.Generator().manual_seed(seed))


def test_t5_training_step_shift_right_captured_whole():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.T5Config(d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2, vocab_size=100,
                                   dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0)
    model = transformers.T5ForConditionalGeneration(config)
    opt = _train_steps(model, lambda b, s, i: dict(input_ids=_ids(b, s, i), attention_mask=torch.ones(b, s, dtype=torch.long),
                                                   labels=_ids(b, s // 2 + 1, i + 3)))
    breaks, fallbacks, compiles = _counts(opt)
    assert (breaks, fallbacks) == (0, 0) and compiles <= 2, _counts(opt)


def test_distilbert_multi_label_training_step_captured_whole():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.DistilBertConfig(dim=32, n_layers=2, n_heads=2, hidden_dim=64, vocab_size=100,
                                           max_position_embeddings=64, dropout=0.0, attention_dropout=0.0,
                                           seq_classif_dropout=0.0, num_labels=3,
                                           problem_type="multi_label_classification")
    model = transformers.DistilBertForSequenceClassification(config)
    opt = _train_steps(model, lambda b, s, i: dict(input_ids=_ids(b, s, i), attention_mask=torch.ones(b, s, dtype=torch.long),
                                                   labels=(_ids(b, 3, i) % 2).float()))
    breaks, fallbacks, compiles = _counts(opt)
    assert (breaks, fallbacks) == (0, 0) and compiles <= 2, _counts(opt)
