"""Random ops in a graph that trains. A dropout becomes `dropout_with_mask`, which draws exactly
what eager's dropout draws (the same generator calls on the same shapes) and also returns its mask,
so the backward multiplies by the forward's mask, saved, never by a fresh draw. Any other random
op a gradient flows through (attention with dropout) becomes a `KeepRng` call, which returns the
generator's state from before its draw; torch's backward of the op (extern) replays the op from
that state, so it sees the forward's numbers."""

from __future__ import annotations

import operator
from typing import Any

import sympy
import torch
import torch.fx

from pdyn.backends.autograd.builder import BackwardBuilder
from pdyn.backends.autograd.partition import NotDifferentiable
from pdyn.backends.autograd.rules import bind, derivative, pointwise
from pdyn.ops import canonical, op_of
from pdyn.ops.effects import draws_random
from pdyn.shapes.graph_meta import SIZES


def fused_dropout(x: torch.Tensor, p: float) -> bool:
    """Where aten's dropout calls native_dropout (its fused kernel): GPU tensors with 0 < p < 1."""
    return x.device.type in ("cuda", "xpu") and 0 < p < 1 and x.numel() > 0


def dropout_with_mask(x: torch.Tensor, p: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager's `F.dropout(x, p, training=True)` and the mask its backward multiplies by: aten's
    native_dropout where aten calls it, else aten's `_dropout` spelled out (a bernoulli draw on a
    tensor like x, scaled by 1 / (1 - p)), each the same draws as eager's."""
    if fused_dropout(x, p):
        out, mask = torch.ops.aten.native_dropout(x, p, True)
        return out, mask
    if p == 1 or x.numel() == 0:
        return x * torch.zeros((), dtype=x.dtype, device=x.device), torch.zeros_like(x)
    noise = torch.empty_like(x).bernoulli_(1 - p)
    noise.div_(1 - p)
    return x * noise, noise


class KeepRng:
    """Calls a random op and also returns the state of the generator it draws from, as it was
    before the call; `replay(state, ...)` runs the op again on the same numbers."""

    def __init__(self, target: Any, method: bool) -> None:
        self.target, self.method = target, method
        self.__name__ = f"keep_rng_{getattr(target, '__name__', target)}"

    def run(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(args[0], self.target)(*args[1:], **kwargs) if self.method else self.target(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, torch.Tensor]:
        state = _rng_state(args)
        return self.run(*args, **kwargs), state

    def replay(self, state: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        device = _device(args)
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else [],
                                   device_type=device.type if device.type == "cuda" else "cuda"):
            _set_rng_state(device, state)
            return self.run(*args, **kwargs), state


def _device(args: Any) -> torch.device:
    return next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))


def _rng_state(args: Any) -> torch.Tensor:
    device = _device(args)
    return torch.cuda.get_rng_state(device) if device.type == "cuda" else torch.get_rng_state()


def _set_rng_state(device: torch.device, state: torch.Tensor) -> None:
    if device.type == "cuda":
        torch.cuda.set_rng_state(state, device)
    else:
        torch.set_rng_state(state)


def _split(graph: torch.fx.Graph, node: torch.fx.Node, target: Any, args: Any, kwargs: Any,
           second: torch.Tensor, needs: set[torch.fx.Node]) -> torch.fx.Node:
    """Replace `node` by `target(*args)` returning (node's value, `second`) and its two items."""
    fake = node.meta["example_value"]
    sizes = node.meta[SIZES]
    with graph.inserting_before(node):
        pair = graph.call_function(target, tuple(args), dict(kwargs))
        out = graph.call_function(operator.getitem, (pair, 0))
        extra = graph.call_function(operator.getitem, (pair, 1))
    extra_sizes = sizes if second.shape == fake.shape else tuple(sympy.Integer(n) for n in second.shape)
    pair.meta.update({"example_value": (fake, second), SIZES: (sizes, extra_sizes), "pdyn_extra": extra})
    out.meta.update({"example_value": fake, SIZES: sizes})
    extra.meta.update({"example_value": second, SIZES: extra_sizes})
    node.replace_all_uses_with(out)
    graph.erase_node(node)
    needs.discard(node)
    needs.update({pair, out})
    return pair


def rewrite_random(graph: torch.fx.Graph, needs: set[torch.fx.Node], fake_mode: Any) -> None:
    """Each random op a gradient flows through: a dropout keeps its mask, any other its state."""
    for node in list(graph.nodes):
        if node not in needs or not draws_random(node):
            continue
        if op_of(node).name != "dropout":
            with fake_mode:
                state = torch.empty(len(_rng_state([node.meta["example_value"]])), dtype=torch.uint8)
            _split(graph, node, KeepRng(node.target, node.op == "call_method"), node.args, node.kwargs, state, needs)
            continue
        a = bind(node, ("input", "p", "training", "inplace"), {"p": 0.5, "training": True, "inplace": False})
        if a["training"] is False or a["p"] == 0:
            continue
        if not isinstance(a["p"], float) or a["training"] is not True or a["inplace"]:
            raise NotDifferentiable(f"dropout with p={a['p']!r}, training={a['training']!r}")
        fake = node.meta["example_value"]
        mask = torch.empty_like(fake, dtype=torch.bool) if fused_dropout(fake, a["p"]) else fake
        _split(graph, node, dropout_with_mask, (a["input"], a["p"]), {}, mask, needs)


@derivative(canonical(dropout_with_mask).name, params="input p")
def dropout_rule(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    grad = g[0]
    if grad is None:
        return
    mask = bx.primal(node.meta["pdyn_extra"])
    scaled = pointwise(bx, torch.mul, grad, mask)
    if fused_dropout(node.meta["example_value"][0], a["p"]):
        scaled = pointwise(bx, torch.mul, scaled, 1.0 / (1.0 - a["p"]))
    bx.accumulate(a["input"], scaled)
