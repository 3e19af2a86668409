"""The Triton slice runs kernels under Triton's interpreter on machines without a GPU: the variable
must be set before triton is first imported, so it is set here, at import (as tests/backends does)."""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
