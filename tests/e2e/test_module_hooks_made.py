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


class Keeper(torch.nn.Module):
    """Keeps the handle of a hook it registers: the caller removes it after the call."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.handle = None

    def forward(self, x):
        self.handle = self.lin.register_forward_hook(double)
        return self.lin(x) + 1


def test_a_handle_kept_by_the_module_is_the_real_one():
    eager, compiled = Keeper(), pdyn.optimize(Keeper())
    compiled.load_state_dict(eager.state_dict())
    for n in (2, 3, 5):
        x = torch.randn(n, 4)
        assert_same(compiled(x), eager(x))
        assert type(compiled.handle) is RemovableHandle
        assert list(compiled.lin._forward_hooks.values()) == [double]
        compiled.handle.remove()   # the caller removes it after the call
        eager.handle.remove()
        assert not compiled.lin._forward_hooks and not eager.lin._forward_hooks
    stats = pdyn.stats()
    assert (stats["graphs"], stats["graph_breaks"], stats["compiles"]) == (1, 0, 1)


class BreaksBetween(torch.nn.Module):
    """A graph break while the handle is live: the frame runs eagerly (its resume function would
    get a handle whose id changes on every call), never wrong."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.seen = None

    def forward(self, x):
        handle = self.lin.register_forward_hook(double)
        y = self.lin(x)
        torch._dynamo.graph_break()
        handle.remove()
        self.seen = y
        return y + self.lin(x)


def test_a_break_with_a_live_handle_runs_the_frame_eagerly():
    with pdyn.config.patch(warn_no_graph=False):
        run_both(BreaksBetween(), [2, 3, 5])
    stats = pdyn.stats()
    assert (stats["graphs"], stats["compiles"], stats["eager_fallbacks"]) == (0, 1, 1)
