"""Random ops in a graph that trains: a dropout becomes `dropout_with_mask`, which draws exactly
what eager's dropout draws (the same generator calls on the same shapes) and also returns its mask,
so the backward multiplies by the forward's mask, saved, never by a fresh draw."""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx

from pdyn.backends.autograd.builder import BackwardBuilder
from pdyn.backends.autograd.partition import NotDifferentiable
from pdyn.backends.autograd.rules import bind, derivative, pointwise
from pdyn.ops import canonical, op_of
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


def rewrite_dropouts(graph: torch.fx.Graph, needs: set[torch.fx.Node]) -> None:
    """Each training-mode dropout a gradient flows through becomes dropout_with_mask and getitems."""
    for node in list(graph.nodes):
        if node.op not in ("call_function", "call_method") or op_of(node).name != "dropout" or node not in needs:
            continue
        a = bind(node, ("input", "p", "training", "inplace"), {"p": 0.5, "training": True, "inplace": False})
        if a["training"] is False or a["p"] == 0:
            continue
        if not isinstance(a["p"], float) or a["training"] is not True or a["inplace"]:
            raise NotDifferentiable(f"dropout with p={a['p']!r}, training={a['training']!r}")
        fake = node.meta["example_value"]
        with graph.inserting_before(node):
            pair = graph.call_function(dropout_with_mask, (a["input"], a["p"]))
            out = graph.call_function(operator.getitem, (pair, 0))
            mask = graph.call_function(operator.getitem, (pair, 1))
        pair.meta["pdyn_mask"] = mask
        mask_fake = torch.empty_like(fake, dtype=torch.bool) if fused_dropout(fake, a["p"]) else fake
        pair.meta.update({"example_value": (fake, mask_fake), SIZES: (node.meta[SIZES], node.meta[SIZES])})
        for item, value in ((out, fake), (mask, mask_fake)):
            item.meta.update({"example_value": value, SIZES: node.meta[SIZES]})
        node.replace_all_uses_with(out)
        graph.erase_node(node)
        needs.discard(node)
        needs.update({pair, out})


@derivative(canonical(dropout_with_mask).name, params="input p")
def dropout_rule(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    grad = g[0]
    if grad is None:
        return
    mask = bx.primal(node.meta["pdyn_mask"])
    scaled = pointwise(bx, torch.mul, grad, mask)
    if fused_dropout(node.meta["example_value"][0], a["p"]):
        scaled = pointwise(bx, torch.mul, scaled, 1.0 / (1.0 - a["p"]))
    bx.accumulate(a["input"], scaled)
