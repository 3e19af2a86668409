"""nn.Module semantics inside compiled code, against eager on every call: hooks whose tables change
during the traced call, module state after each call, exact counts."""

from __future__ import annotations

import torch
from torch import nn

import pdyn
from tests.helpers import assert_same


def compare(make, calls, fn=None):
    """Two modules built alike: one run eagerly, one optimized (directly, or through `fn(module, *args)`);
    results and state_dicts compared after each call. Returns pdyn's stats of the optimized callable."""
    pdyn.reset()
    torch.manual_seed(0)
    eager_m = make()
    torch.manual_seed(0)
    opt_m = make()
    eager = eager_m if fn is None else (lambda *a: fn(eager_m, *a))
    opt = pdyn.optimize(opt_m if fn is None else (lambda *a: fn(opt_m, *a)), backend="eager")
    for number, args in enumerate(calls):
        assert_same(opt(*args), eager(*args), f"call {number}: result")
        assert_same(opt_m.state_dict(), eager_m.state_dict(), f"call {number}: state_dict")
    return pdyn.stats(opt)


class RemovesHookInForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.handle = self.lin.register_forward_hook(lambda m, a, out: out * 7)

    def forward(self, x):
        y = self.lin(x)
        self.handle.remove()
        return y + self.lin(x)   # eager: no hook this time


def test_hook_removed_in_forward_then_module_called_again():
    x = torch.randn(2, 3)
    stats = compare(RemovesHookInForward, [(x,), (x,), (x,)])
    # the second call of lin is a break (its hooks changed in the trace); later calls have no hook
    assert (stats["graph_breaks"], stats["eager_fallbacks"]) == (1, 0), stats


def self_removing(pre):
    def make():
        m = nn.Linear(3, 3)
        box = {}

        def hook(mod, *rest):
            box["h"].remove()
            return (rest[0][0] * 10,) if pre else rest[-1] * 10
        box["h"] = m.register_forward_pre_hook(hook) if pre else m.register_forward_hook(hook)
        return m
    return make


def test_hook_that_removes_itself_then_module_called_again():
    x = torch.randn(2, 3)
    for pre in (False, True):
        stats = compare(self_removing(pre), [(x,), (x,), (x,)], fn=lambda m, x: m(x) + m(x))
        assert stats["eager_fallbacks"] == 0, stats


class RaisesWhenBig(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("seen", torch.zeros(()))
        self.register_forward_hook(lambda m, a, out: m.seen.add_(1), always_call=True)

    def forward(self, x):
        if x.shape[0] > 3:
            raise ValueError("big")
        return self.lin(x)


def call_or_zeros(m, x):
    try:
        return m(x)
    except ValueError:
        return x * 0


def test_always_call_hook_runs_when_forward_raises_into_a_handler():
    calls = [(torch.randn(2, 3),), (torch.randn(5, 3),), (torch.randn(2, 3),), (torch.randn(6, 3),)]
    stats = compare(RaisesWhenBig, calls, fn=call_or_zeros)
    # the raising call is a break: eager runs the hook, then raises into the handler
    assert (stats["graph_breaks"], stats["eager_fallbacks"]) == (1, 0), stats


class GrowsInForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3)])
        self.heads = nn.ModuleDict({"a": nn.Linear(3, 3)})

    def forward(self, x):
        self.layers.append(nn.ReLU())          # eager: the loop below sees the new layer
        for layer in self.layers:
            x = layer(x)
        for key in self.heads:
            x = self.heads[key](x) + len(key)
        return x + len(self.layers)


def test_module_containers_changed_in_forward_then_read():
    x = torch.randn(2, 3)
    stats = compare(GrowsInForward, [(x,), (x,), (x,)])
    assert stats["eager_fallbacks"] == 0 and stats["graph_breaks"] >= 1, stats


class StoresBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("last", torch.zeros(3))

    def forward(self, x):
        self.last = x.sum(0)                    # a buffer replaced: buffers() lists the new tensor
        return self.lin(x) + sum(b.sum() for _, b in self.named_buffers())


def test_buffer_assigned_in_forward_then_buffers_listed():
    calls = [(torch.randn(2, 3),), (torch.randn(4, 3),), (torch.randn(2, 3),)]
    compare(StoresBuffer, calls)   # reading the stale table is a break (or the frame runs eagerly)


class OptionalHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"a": nn.Linear(3, 3)})

    def forward(self, x):
        if "b" in self.heads:
            return self.heads["b"](x) * 100
        return self.heads["a"](x)


def test_moduledict_membership_is_guarded():
    pdyn.reset()
    torch.manual_seed(0)
    m = OptionalHead()
    opt = pdyn.optimize(m, backend="eager")
    x = torch.randn(2, 3)
    for change in (None, lambda: m.heads.__setitem__("b", nn.Tanh()), lambda: m.heads.__delitem__("b")):
        if change is not None:
            change()
        assert_same(opt(x), OptionalHead.forward(m, x))
    assert pdyn.stats(opt)["compiles"] == 2, pdyn.stats(opt)
