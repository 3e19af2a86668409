"""The eager backend: run the captured GraphModule with PyTorch, op by op."""

from __future__ import annotations

from typing import Any, Callable

import torch.fx


def eager(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    return gm.forward
