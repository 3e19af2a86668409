"""Forward hooks registered inside the compiled call (`h = m.register_forward_hook(f)`, `m(x)`,
`h.remove()`): traced, the hook run inline in nn.Module's order, the registration replayed after
the graph (the hook kept, or, removed, only the handle counter moved on), compared with eager
over changing shapes: outputs, the hooks' side effects, the hook tables and the handle counter."""

from __future__ import annotations

import copy

import pytest
import torch
from torch.utils.hooks import RemovableHandle

import pdyn
from tests.helpers import assert_same

pytestmark = pytest.mark.filterwarnings("error:pdyn")


def double(module, inputs, output):
    return output * 2


def shift(module, args, kwargs):
    return (args[0] + 1,), kwargs


class Probe(torch.nn.Module):
    """Registers a hook on a submodule, calls it, removes the handle: feature extraction."""

    def __init__(self, keep: bool = False, as_context: bool = False):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.keep, self.as_context = keep, as_context
        self.seen: torch.Tensor | None = None

    def forward(self, x):
        captured = []

        def capture(module, inputs, output):
            captured.append(output.sum(-1))

        if self.as_context:
            with self.lin.register_forward_hook(capture):
                y = self.lin(x)
        else:
            handle = self.lin.register_forward_hook(capture)
            pre = self.lin.register_forward_pre_hook(shift, with_kwargs=True, prepend=True)
            y = self.lin(x)
            handle.remove()
            pre.remove()
        if self.keep:
            self.lin.register_forward_hook(double)   # stays registered after the call
        self.seen = captured[0]   # the hook's side effect, kept
        return y + captured[0].unsqueeze(-1) + len(captured)


def run_both(model: torch.nn.Module, sizes: list[int]) -> torch.nn.Module:
    """Eager and compiled copies over `sizes`: each call's output, the hooks' effects, the tables
    and how far the handle counter moved are equal."""
    eager, compiled = model, pdyn.optimize(copy.deepcopy(model))
    for n in sizes:
        x = torch.randn(n, 4)
        start = RemovableHandle.next_id
        expected = eager(x)
        eager_ids = RemovableHandle.next_id - start
        start = RemovableHandle.next_id
        actual = compiled(x)
        assert RemovableHandle.next_id - start == eager_ids
        assert_same(actual, expected)
        assert_same(compiled.seen, eager.seen)
        for table in ("_forward_hooks", "_forward_pre_hooks", "_forward_hooks_with_kwargs",
                      "_forward_pre_hooks_with_kwargs"):
            assert list(getattr(compiled.lin, table).values()) == list(getattr(eager.lin, table).values())
    return compiled


def test_a_hook_registered_called_and_removed_is_traced():
    run_both(Probe(), [2, 3, 5, 7])
    stats = pdyn.stats()
    assert (stats["graphs"], stats["graph_breaks"], stats["compiles"]) == (1, 0, 1)


def test_a_handle_used_as_a_context_manager():
    run_both(Probe(as_context=True), [2, 3, 5])
    stats = pdyn.stats()
    assert (stats["graphs"], stats["graph_breaks"], stats["compiles"]) == (1, 0, 1)


def test_a_hook_left_registered_is_registered_for_real():
    compiled = run_both(Probe(keep=True), [2, 3, 5])   # each call adds one more `double`
    assert list(compiled.lin._forward_hooks.values()) == [double] * 3
    assert pdyn.stats()["graph_breaks"] == 0


def test_the_order_with_a_real_hook():
    model = Probe()
    model.lin.register_forward_hook(double)   # runs between the prepended pre-hook and capture
    model.lin.register_forward_pre_hook(lambda m, args: (args[0] * 3,))
    run_both(model, [2, 3, 5])
    assert pdyn.stats()["graph_breaks"] == 0
