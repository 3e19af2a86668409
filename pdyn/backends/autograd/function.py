"""One `torch.autograd.Function` per compiled graph: its forward runs the compiled forward graph
(the user's outputs and the saved values), its backward the compiled backward graph. Autograd
does the rest as for any Function: `retain_graph`, freeing the saved tensors after a backward,
accumulation into `.grad`, `autograd.grad`, hooks on the outputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch.autograd.function import once_differentiable

from pdyn.backends.autograd.joint import Joint


@dataclass
class TrainingStep:
    """The joint graphs of one entry and their compiled callables."""

    joint: Joint
    forward: Callable[..., Any]
    backward: Callable[..., Any]

    def sizes(self, args: tuple[Any, ...]) -> list[int]:
        """The size symbols' values in this call, read as the forward's bindings say."""
        return [int(args[b.placeholder]) if b.dim is None else args[b.placeholder].shape[b.dim]
                for _, b in self.joint.symbols]


class GraphFunction(torch.autograd.Function):
    """Autograd's view of one graph: inputs in, the graph's outputs out, one backward node."""

    @staticmethod
    def forward(ctx: Any, step: TrainingStep, *args: Any) -> Any:  # type: ignore[override]
        joint = step.joint
        outs = tuple(step.forward(*args))
        user, extra = outs[:joint.n_outputs], outs[joint.n_outputs:]
        ctx.save_for_backward(*(args[i] if kind == "input" else extra[i] for kind, i in joint.saved))
        ctx.step, ctx.sizes, ctx.n_inputs = step, step.sizes(args), len(args)
        diff = set(joint.diff_outputs)
        ctx.mark_non_differentiable(*(o for i, o in enumerate(user) if i not in diff and isinstance(o, torch.Tensor)))
        return user

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, *grads: Any) -> Any:
        step: TrainingStep = ctx.step
        joint = step.joint
        outputs = [_dense(grads[i]) for i in joint.diff_outputs]
        saved = [_dense(t) for t in ctx.saved_tensors]
        result = step.backward(*ctx.sizes, *outputs, *saved)
        out: list[Any] = [None] * ctx.n_inputs
        for k, i in enumerate(joint.grad_inputs):
            out[i] = result[k]
        return (None, *out)


def _dense(t: torch.Tensor) -> torch.Tensor:
    """The backward graph is compiled for contiguous inputs (an expanded grad of a sum is not)."""
    return t if t.is_contiguous() else t.contiguous()
