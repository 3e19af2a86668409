"""What generated wrappers call in torch: the allocator of outputs and intermediates, a
contiguous copy where a kernel needs one, attention with a mask the fused kernels take, and `TorchOp`, one fx node run with torch (a fallback).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx


def allocator(device: torch.device) -> Any:
    """`empty(size, stride, dtype)` on `device`: torch's C++ entry that Inductor's wrappers call
    (no Python argument parsing; about 2.5x cheaper per call), else torch.empty_strided. The CUDA
    one allocates on the current device, which the wrapper has made `device`."""
    fast = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
    entry = getattr(fast, f"_empty_strided_{device.type}", None)
    if entry is not None:
        return entry

    def empty(size: tuple, stride: tuple, dtype: torch.dtype) -> torch.Tensor:
        return torch.empty_strided(size, stride, dtype=dtype, device=device)

    return empty


def contiguous(t: Any) -> Any:
    return t.contiguous() if isinstance(t, torch.Tensor) and not t.is_contiguous() else t


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: Any = None,
                                 *args: Any, **kwargs: Any) -> torch.Tensor:
    """scaled_dot_product_attention, with a mask whose last dim is broadcast (stride 0) made dense
    first: the GPU's fused kernels refuse such a mask, and torch then runs its math path (a dozen
    launches and an S x S score tensor per head). The mask is small beside the scores it spares."""
    if isinstance(attn_mask, torch.Tensor) and attn_mask.is_cuda and attn_mask.dim() and attn_mask.stride(-1) != 1:
        attn_mask = attn_mask.contiguous()
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask, *args, **kwargs)


def check_index(flag: torch.Tensor, error: type) -> None:
    """`flag` (0-d) is nonzero where every index a kernel gathers with is in range. On the GPU an
    assert on the device, as eager's kernels fail (no sync); elsewhere the error eager raises."""
    if flag.is_cuda:
        torch._assert_async(flag, "index out of range")
    elif not bool(flag):
        raise error("index out of range")


class TorchOp:
    """One fx node run with torch: `values` replace the node's input nodes in order."""

    def __init__(self, node: torch.fx.Node, gm: torch.fx.GraphModule, target: Any = None,
                 args: Any = None, kwargs: Any = None) -> None:
        self.inputs = list(node.all_input_nodes)
        self.op = node.op
        self.target = node.target if target is None else target
        self.args = node.args if args is None else args
        self.kwargs = node.kwargs if kwargs is None else kwargs
        if self.op in ("get_attr", "call_module"):
            self.target = _fetch_attr(gm, node.target)
        if target is not None:
            self.op = "call_function"
        self.plan = self._plan()

    def _plan(self) -> tuple[list, dict] | None:
        """Where each argument comes from, decided once: (True, input position) for a node, (False,
        value) for a constant. None where a node sits inside a container (map_arg then)."""
        if self.op != "call_function":
            return None
        pos = {n: i for i, n in enumerate(self.inputs)}

        def spec(a: Any) -> tuple[bool, Any] | None:
            if isinstance(a, torch.fx.Node):
                return (True, pos[a])
            found: list[Any] = []
            torch.fx.node.map_arg(a, found.append)
            return None if found else (False, a)

        args = [spec(a) for a in self.args]
        kwargs = {k: spec(v) for k, v in self.kwargs.items()}
        if any(a is None for a in args) or any(v is None for v in kwargs.values()):
            return None
        return args, kwargs  # type: ignore[return-value]

    def __call__(self, *values: Any) -> Any:
        plan = self.plan
        if plan is not None:  # NOTE: the per-call path: no dict, no recursive map_arg
            args = [values[a] if node else a for node, a in plan[0]]
            if plan[1]:
                return self.target(*args, **{k: values[a] if node else a
                                             for k, (node, a) in plan[1].items()})
            return self.target(*args)
        if self.op == "get_attr":
            return self.target
        env = dict(zip(self.inputs, values))
        args = torch.fx.node.map_arg(self.args, env.__getitem__)
        kwargs = torch.fx.node.map_arg(self.kwargs, env.__getitem__)
        if self.op == "call_method":
            return getattr(args[0], self.target)(*args[1:], **kwargs)
        return self.target(*args, **kwargs)  # a function, or the submodule of a call_module node


def _fetch_attr(gm: torch.fx.GraphModule, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj
