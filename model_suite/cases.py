"""The models of the suite, each built from a small config with random weights (2 layers, hidden
64, 4 heads, vocab 100: nothing is downloaded), and the inputs of one call. Shared by the tests
and benchmarks/models.py."""

from __future__ import annotations

from typing import Any

import torch
import transformers

from model_suite.case import VOCAB, ModelCase, padding_mask, text_inputs, token_ids
from model_suite.wide_cases import NOT_CAPTURED, WIDE

HIDDEN, HEADS, LAYERS, FFN, POSITIONS = 64, 4, 2, 128, 128
SPECIAL = {"bos_token_id": 0, "eos_token_id": 0, "pad_token_id": 0}  # inside the small vocabulary


def gpt2() -> torch.nn.Module:
    config = transformers.GPT2Config(n_layer=LAYERS, n_embd=HIDDEN, n_head=HEADS, vocab_size=VOCAB,
                                     n_positions=POSITIONS, **SPECIAL)
    return transformers.GPT2LMHeadModel(config)


def bert_config() -> transformers.BertConfig:
    return transformers.BertConfig(num_hidden_layers=LAYERS, hidden_size=HIDDEN, num_attention_heads=HEADS,
                                   intermediate_size=FFN, vocab_size=VOCAB, max_position_embeddings=POSITIONS,
                                   pad_token_id=0)


def bert() -> torch.nn.Module:
    return transformers.BertModel(bert_config())


def bert_mlm() -> torch.nn.Module:
    return transformers.BertForMaskedLM(bert_config())


def llama() -> torch.nn.Module:
    config = transformers.LlamaConfig(num_hidden_layers=LAYERS, hidden_size=HIDDEN, num_attention_heads=HEADS,
                                      num_key_value_heads=2, intermediate_size=FFN, vocab_size=VOCAB,
                                      max_position_embeddings=POSITIONS, **SPECIAL)
    return transformers.LlamaForCausalLM(config)


def t5() -> torch.nn.Module:
    config = transformers.T5Config(d_model=HIDDEN, d_kv=HIDDEN // HEADS, d_ff=FFN, num_layers=LAYERS,
                                   num_heads=HEADS, vocab_size=VOCAB, decoder_start_token_id=0, pad_token_id=0,
                                   eos_token_id=1)
    return transformers.T5Model(config)


def distilbert() -> torch.nn.Module:
    config = transformers.DistilBertConfig(n_layers=LAYERS, dim=HIDDEN, n_heads=HEADS, hidden_dim=FFN,
                                           vocab_size=VOCAB, max_position_embeddings=POSITIONS, pad_token_id=0)
    return transformers.DistilBertModel(config)


def t5_inputs(batch: int, seq: int, seed: int) -> dict[str, Any]:
    """The encoder's padded input and a decoder input about half as long (its own dynamic dim)."""
    inputs = text_inputs(batch, seq, seed)
    inputs["decoder_input_ids"] = token_ids(batch, max(seq // 2, 2), seed + 1000)
    return inputs


def multihead_attention() -> torch.nn.Module:
    return torch.nn.MultiheadAttention(HIDDEN, HEADS, batch_first=True)


def encoder_layer() -> torch.nn.Module:
    return torch.nn.TransformerEncoderLayer(HIDDEN, HEADS, dim_feedforward=FFN, batch_first=True)


def _features(batch: int, seq: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(batch, seq, HIDDEN) features and a key padding mask (True where padded)."""
    x = torch.randn(batch, seq, HIDDEN, generator=torch.Generator().manual_seed(seed))
    return x, padding_mask(batch, seq) == 0


def mha_inputs(batch: int, seq: int, seed: int) -> dict[str, Any]:
    x, pad = _features(batch, seq, seed)
    return {"query": x, "key": x, "value": x, "key_padding_mask": pad}


def encoder_layer_inputs(batch: int, seq: int, seed: int) -> dict[str, Any]:
    x, pad = _features(batch, seq, seed)
    return {"src": x, "src_key_padding_mask": pad}


def causal_lm_labels(batch: int, seq: int, seed: int) -> dict[str, Any]:
    """Labels are the input ids, ignored (-100) on padding."""
    inputs = text_inputs(batch, seq, seed)
    inputs["labels"] = inputs["input_ids"].masked_fill(inputs["attention_mask"] == 0, -100)
    return inputs


def masked_lm_labels(batch: int, seq: int, seed: int) -> dict[str, Any]:
    """Every third token is predicted; the rest and the padding are ignored (-100)."""
    inputs = text_inputs(batch, seq, seed)
    keep = (torch.arange(seq) % 3 == 0).expand(batch, seq) & (inputs["attention_mask"] == 1)
    inputs["labels"] = inputs["input_ids"].masked_fill(~keep, -100)
    return inputs


INFERENCE = [
    ModelCase("gpt2", gpt2, text_inputs),
    ModelCase("bert", bert, text_inputs),
    ModelCase("llama", llama, text_inputs),
    ModelCase("t5", t5, t5_inputs),
    ModelCase("distilbert", distilbert, text_inputs),
    ModelCase("multihead_attention", multihead_attention, mha_inputs),
    ModelCase("transformer_encoder_layer", encoder_layer, encoder_layer_inputs),
]
TRAINING = [
    ModelCase("gpt2_train", gpt2, causal_lm_labels),
    ModelCase("bert_mlm_train", bert_mlm, masked_lm_labels),
]
CASES = {case.name: case for case in INFERENCE + TRAINING}
# The second, wider group: more architectures at smaller sizes (wide_cases.py), those
# captured whole; tests/models/test_wide.py checks each.
WIDE_CAPTURED = [case for case in WIDE if case.name not in NOT_CAPTURED]
