"""Helpers for the training tests: compile through pdyn's Triton backend keeping each compiled
callable (its joint graphs), and compare outputs and every input's gradient with eager's."""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.utils._pytree import tree_leaves

import pdyn
from model_suite.train_cases import weighted_loss  # noqa: F401  # re-exported for the tests
from pdyn.backends.triton import triton_backend

TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


class TrainRecorder:
    """A backend compiling with Triton that keeps what each compile returned."""

    def __init__(self) -> None:
        self.compiled: list[Any] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        compiled = triton_backend(gm, example_inputs)
        self.compiled.append(compiled)
        return compiled

    @property
    def joint(self) -> Any:
        joint = getattr(self.compiled[-1], "pdyn_joint", None)
        assert joint is not None, "the graph ran with torch, without a backward graph of pdyn's"
        return joint


def _fresh(args: tuple[Any, ...]) -> list[Any]:
    return [a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args]


def check_grads(fn: Callable[..., Any], *calls: tuple[Any, ...], compiles: int | None = 1,
                seed: int | None = None) -> TrainRecorder:
    """Each call: pdyn's outputs and the gradients of every input that requires grad equal eager's
    (the same seed before both runs when `seed` is given)."""
    rec = TrainRecorder()
    compiled = pdyn.optimize(fn, backend=rec)
    for args in calls:
        ours, theirs = _fresh(args), _fresh(args)
        if seed is not None:
            torch.manual_seed(seed)
        out = compiled(*ours)
        weighted_loss(out).backward()
        if seed is not None:
            torch.manual_seed(seed)
        ref = fn(*theirs)
        weighted_loss(ref).backward()
        for o, r in zip(tree_leaves(out), tree_leaves(ref)):
            if isinstance(r, torch.Tensor):
                torch.testing.assert_close(o, r, **TOLERANCE)
        for i, (a, b) in enumerate(zip(ours, theirs)):
            if isinstance(b, torch.Tensor) and b.requires_grad:
                assert (a.grad is None) == (b.grad is None), f"input {i}: grad {a.grad} vs eager's {b.grad}"
                if b.grad is not None:
                    torch.testing.assert_close(a.grad, b.grad, **TOLERANCE, msg=f"input {i}'s gradient")
    if compiles is not None:
        assert pdyn.stats(compiled)["compiles"] == compiles
    return rec


def backward_targets(rec: TrainRecorder) -> list[str]:
    """The names of the targets the last backward graph calls."""
    return [getattr(n.target, "__name__", str(n.target)) for n in rec.joint.backward.graph.nodes
            if n.op in ("call_function", "call_method")]


def grad_input(*shape: int) -> torch.Tensor:
    return torch.randn(*shape).requires_grad_()
