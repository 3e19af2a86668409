"""Training cases: the model suite's models (model_suite/cases.py) with a loss, in train mode
(dropout on). The language models and the classifier take labels and return `.loss`; the
suite's models without a head (BERT, DistilBERT, attention, encoder layer) are trained on a
weighted sum of their outputs. Shared by the training tests and benchmarks/train_saved_bytes.py; `weighted_loss` is
the loss of the cases without labels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import transformers
from torch.utils._pytree import tree_leaves

from model_suite import cases
from model_suite.case import ModelCase, token_ids

IMAGE, PATCH, CLASSES = 32, 8, 10


@dataclass(frozen=True)
class TrainCase:
    name: str
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[int, int, int], dict[str, Any]]   # (batch, seq, seed) -> forward's kwargs
    labels: bool                                          # the output has `.loss`


def t5_lm() -> torch.nn.Module:
    config = transformers.T5Config(d_model=cases.HIDDEN, d_kv=cases.HIDDEN // cases.HEADS, d_ff=cases.FFN,
                                   num_layers=cases.LAYERS, num_heads=cases.HEADS, vocab_size=100,
                                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    return transformers.T5ForConditionalGeneration(config)


def t5_labels(batch: int, seq: int, seed: int) -> dict[str, Any]:
    inputs = cases.text_inputs(batch, seq, seed)
    inputs["labels"] = token_ids(batch, max(seq // 2, 2), seed + 1000)
    return inputs


def vit() -> torch.nn.Module:
    config = transformers.ViTConfig(hidden_size=cases.HIDDEN, num_hidden_layers=cases.LAYERS,
                                    num_attention_heads=cases.HEADS, intermediate_size=cases.FFN,
                                    image_size=IMAGE, patch_size=PATCH, num_labels=CLASSES)
    return transformers.ViTForImageClassification(config)


def image_labels(batch: int, seq: int, seed: int) -> dict[str, Any]:
    """Images of the fixed size (seq is unused: the position embeddings fix it), a class each."""
    g = torch.Generator().manual_seed(seed)
    return {"pixel_values": torch.randn(batch, 3, IMAGE, IMAGE, generator=g),
            "labels": torch.randint(0, CLASSES, (batch,), generator=g)}


def _from_suite(case: ModelCase, labels: bool) -> TrainCase:
    return TrainCase(case.name.removesuffix("_train"), case.build, case.inputs, labels)


CAUSAL = [cases.ModelCase("llama", cases.llama, cases.causal_lm_labels)]
TRAIN_CASES = {c.name: c for c in [
    _from_suite(cases.CASES["gpt2_train"], True),
    _from_suite(CAUSAL[0], True),
    _from_suite(cases.CASES["bert_mlm_train"], True),
    TrainCase("vit", vit, image_labels, True),
    TrainCase("t5", t5_lm, t5_labels, True),
    _from_suite(cases.CASES["bert"], False),
    _from_suite(cases.CASES["distilbert"], False),
    _from_suite(cases.CASES["multihead_attention"], False),
    _from_suite(cases.CASES["transformer_encoder_layer"], False),
]}


def weighted_loss(out: Any) -> torch.Tensor:
    """A scalar from every float output with a different weight per element, so each element's
    gradient differs (a plain sum would hide a transposed or misplaced gradient)."""
    total = torch.zeros(())
    for o in tree_leaves(out):
        if isinstance(o, torch.Tensor) and o.is_floating_point():
            w = torch.arange(o.numel(), dtype=torch.float32).reshape(o.shape).sin()
            total = total + (o.float() * w).sum()
    return total
