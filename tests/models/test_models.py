"""Real models captured whole: each model of the suite over batch sizes 1, 2, 3, 4, 7 and sequence
lengths 7, 16, 33, 64 with padded masks, against eager; one training step for GPT-2 and BERT.

Each inference test asserts outputs equal to eager on every call, one graph with no break on the
first call, that `fullgraph=True` compiles it, and one compile over the sequence (batch 1 shares
the entry of the other batches: none of these models branches on the batch).
"""

from model_suite.cases import CASES
from tests.models.harness import check_inference, check_training_step


def test_gpt2():
    check_inference(CASES["gpt2"])


def test_bert():
    check_inference(CASES["bert"])


def test_llama():
    check_inference(CASES["llama"])


def test_t5():
    check_inference(CASES["t5"])


def test_distilbert():
    check_inference(CASES["distilbert"])


def test_multihead_attention_with_key_padding_mask():
    check_inference(CASES["multihead_attention"])


def test_transformer_encoder_layer_batch_first():
    check_inference(CASES["transformer_encoder_layer"])


def test_gpt2_training_step():
    check_training_step(CASES["gpt2_train"])


def test_bert_training_step():
    check_training_step(CASES["bert_mlm_train"])
