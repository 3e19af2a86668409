"""Triton backend tests run the generated kernels under Triton's interpreter on machines without a
GPU: TRITON_INTERPRET must be set before triton is first imported, so it is set here, at import."""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

# tests that make their tensors with torch's factories and no device (the training tests): on a GPU
# machine they run on the GPU, where the backend compiles kernels (CPU tensors run with torch there)
ON_DEFAULT_DEVICE = ("test_autograd_ops.py", "test_autograd_training.py", "test_autograd_models.py")


@pytest.fixture(autouse=True)
def _gpu_by_default(request: pytest.FixtureRequest):
    if not torch.cuda.is_available() or request.node.path.name not in ON_DEFAULT_DEVICE:
        yield
        return
    torch.set_default_device("cuda")
    try:
        yield
    finally:
        torch.set_default_device(None)
