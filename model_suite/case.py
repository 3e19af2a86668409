"""A model of the suite as a `ModelCase` (how to build it from a small config with random weights,
and the keyword arguments of one call from (batch, seq, seed)), the suite's sequence of shapes,
inputs with padded masks, and the comparison of model outputs (ModelOutput, tuples, caches,
tensors) against eager with a tolerance."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch

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
