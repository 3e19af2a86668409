"""Distributed tests: two ranks on gloo, spawned; skipped where torch.distributed or gloo is missing.
TRITON_INTERPRET is set before triton is imported (the spawned ranks inherit it)."""

import os

import pytest
import torch
import torch.distributed as dist

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)
