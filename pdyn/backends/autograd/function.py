"""One `torch.autograd.Function` per compiled graph: its forward runs the compiled forward graph
(the user's outputs and the saved values), its backward the compiled backward graph. Autograd
does the rest as for any Function: `retain_graph`, freeing the saved tensors after a backward,
accumulation into `.grad`, `autograd.grad`, hooks on the outputs."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch.autograd.function import once_differentiable

from pdyn.backends.autograd.joint import Joint, Variant
from pdyn.backends.report import REPORT, BackendReport

log = logging.getLogger("pdyn.lowering")


@dataclass
class TrainingStep:
    """The joint graphs of one entry and their compiled callables. Backward graphs are compiled
    by `lower` on first use: the full backward the first time every output receives a gradient,
    a variant (joint.Variant) the first time only some do (a loss without the logits: the full
    backward is then never compiled). `compiled(gm)` is told of each (the entry's counters)."""

    joint: Joint
    forward: Callable[..., Any]
    lower: Callable[[torch.fx.GraphModule], Callable[..., Any]]
    compiled: Callable[[torch.fx.GraphModule], None] = lambda gm: None
    backward: Callable[..., Any] | None = None
    variants: dict[tuple[int, ...], tuple[Variant, Callable[..., Any]] | None] = field(default_factory=dict)

    def sizes(self, args: tuple[Any, ...]) -> list[int]:
        """The size symbols' values in this call, read as the forward's bindings say."""
        return [int(args[b.placeholder]) if b.dim is None else args[b.placeholder].shape[b.dim]
                for _, b in self.joint.symbols]

    def full_backward(self) -> Callable[..., Any]:
        if self.backward is None:
            graph = self.joint.backward
            try:
                self.backward = self.lower(graph)
            except Exception as e:  # noqa: BLE001  # NOTE: never wrong: torch runs the backward graph
                log.warning("pdyn autograd: the backward graph runs with torch (%s: %s)", type(e).__name__, e)
                self.backward = _with_torch(graph, f"{type(e).__name__}: {e}")
            self.compiled(graph)
        return self.backward

    def variant(self, present: tuple[int, ...]) -> tuple[Variant, Callable[..., Any]] | None:
        """The compiled backward of the outputs `present`, or None (then the full backward runs
        with zeros for the other outputs' gradients)."""
        if present not in self.variants:
            self.variants[present] = None
            if self.joint.rebuild is not None:
                try:
                    v = self.joint.rebuild(list(present))
                    self.variants[present] = (v, self.lower(v.backward))
                    self.compiled(v.backward)
                except Exception as e:  # noqa: BLE001  # NOTE: never wrong: the full backward serves
                    log.warning("pdyn autograd: the full backward serves this call (%s: %s)", type(e).__name__, e)
        return self.variants[present]


def _with_torch(graph: torch.fx.GraphModule, reason: str) -> Callable[..., Any]:
    """A backward graph run by torch op by op (counted: its report says why)."""
    graph.meta[REPORT] = BackendReport("triton", on_torch=f"its backward graph: {reason}")
    return lambda *args: graph(*args)


class GraphFunction(torch.autograd.Function):
    """Autograd's view of one graph: inputs in, the graph's outputs out, one backward node."""

    @staticmethod
    def forward(ctx: Any, step: TrainingStep, *args: Any) -> Any:  # type: ignore[override]
        joint = step.joint
        outs = tuple(step.forward(*args))
        user, extra = outs[:joint.n_outputs], outs[joint.n_outputs:]
        ctx.save_for_backward(*(args[i] if kind == "input" else extra[i] for kind, i in joint.saved))
        ctx.step, ctx.sizes, ctx.n_inputs = step, step.sizes(args), len(args)
        ctx.set_materialize_grads(False)  # an output the loss does not reach costs no zeros
        ctx.like = {i: (user[i].shape, user[i].dtype, user[i].device) for i in joint.diff_outputs}
        diff = set(joint.diff_outputs)
        ctx.mark_non_differentiable(*(o for i, o in enumerate(user) if i not in diff and isinstance(o, torch.Tensor)))
        return user

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, *grads: Any) -> Any:
        step: TrainingStep = ctx.step
        joint = step.joint
        out: list[Any] = [None] * ctx.n_inputs
        present = tuple(i for i in joint.diff_outputs if grads[i] is not None)
        if not present:
            return (None, *out)
        saved = [_dense(t) for t in ctx.saved_tensors]
        ctx.maybe_clear_saved_tensors()  # NOTE: unless retain_graph: the backward owns them now
        found = step.variant(present) if len(present) < len(joint.diff_outputs) else None
        if found is None:
            outputs = [_dense(grads[i]) if grads[i] is not None else _zeros(ctx, i) for i in joint.diff_outputs]
            backward, grad_inputs = step.full_backward(), joint.grad_inputs
        else:
            variant, backward = found
            outputs = [_dense(grads[i]) for i in present]
            saved, grad_inputs = [saved[k] for k in variant.saved], variant.grad_inputs
        args = [*ctx.sizes, *outputs, *saved]
        del saved, outputs
        # a boxed wrapper empties `args` and deletes each saved value after its last use
        result = backward(args) if getattr(backward, "pdyn_boxed", False) else backward(*args)
        for k, i in enumerate(grad_inputs):
            out[i] = result[k]
        return (None, *out)


def _zeros(ctx: Any, i: int) -> torch.Tensor:
    shape, dtype, device = ctx.like[i]
    return torch.zeros(shape, dtype=dtype, device=device)


def _dense(t: torch.Tensor) -> torch.Tensor:
    """The backward graph is compiled for contiguous inputs (an expanded grad of a sum is not)."""
    return t if t.is_contiguous() else t.contiguous()
