"""Torch's backward of one op, as a backward node's target: `ExternVJP(node)(*grads, *leaves)`
runs the op again on its inputs under `torch.enable_grad` and returns `torch.autograd.grad` of
its outputs with respect to the inputs a gradient flows to. For ops without a derivative rule:
their backward runs through torch, the rest of the graph through pdyn's kernels. Never for an op
that draws random numbers (a rerun draws others).
"""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.fx
import torch.utils._pytree as pytree


class ExternVJP:
    """The vector-Jacobian product of the op `node` calls. Its arguments flatten to `leaves`
    (forward nodes and constants); `wrt` are the leaf positions whose gradients it returns;
    `has_grad[i]` says whether output i receives a gradient tensor."""

    def __init__(self, node: torch.fx.Node, has_grad: list[bool], needs_grad: Callable[[torch.fx.Node], bool]) -> None:
        self.target, self.method = node.target, node.op == "call_method"
        self.leaves, self.spec = pytree.tree_flatten((node.args, dict(node.kwargs)))
        self.wrt = [i for i, leaf in enumerate(self.leaves)
                    if isinstance(leaf, torch.fx.Node) and needs_grad(leaf)
                    and isinstance(leaf.meta.get("example_value"), torch.Tensor)]
        self.has_grad = has_grad
        # a KeepRng call (rules_nn.py) replays its op from the generator state the forward kept
        self.state = [node.meta["pdyn_extra"]] if hasattr(node.target, "replay") else []
        self.__name__ = f"vjp_{getattr(node.target, '__name__', node.target)}"

    def __call__(self, *values: Any) -> tuple[torch.Tensor, ...]:
        n = sum(self.has_grad)
        grads, leaves = values[:n], list(values[n:len(values) - len(self.state)])
        state = values[len(values) - len(self.state):]
        with torch.enable_grad():
            inputs = []
            for i in self.wrt:
                leaves[i] = leaves[i].detach().requires_grad_(True)
                inputs.append(leaves[i])
            args, kwargs = pytree.tree_unflatten(leaves, self.spec)
            if state:
                out = self.target.replay(state[0], *args, **kwargs)
            else:
                out = getattr(args[0], self.target)(*args[1:], **kwargs) if self.method else self.target(*args, **kwargs)
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
            pairs = [(o, g) for o, g, has in zip(outs, self._spread(grads), self.has_grad) if has]
            result = torch.autograd.grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True)
        return tuple(torch.zeros_like(x) if r is None else r for r, x in zip(result, inputs))

    def _spread(self, grads: tuple[Any, ...]) -> list[Any]:
        it = iter(grads)
        return [next(it) if has else None for has in self.has_grad]
