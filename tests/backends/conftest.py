"""Triton backend tests run the generated kernels under Triton's interpreter on machines without a
GPU: TRITON_INTERPRET must be set before triton is first imported, so it is set here, at import."""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
