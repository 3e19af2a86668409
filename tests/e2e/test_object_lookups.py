"""Python objects reached from the frame: one tracker per object however it is reached (a store
through one path is what a read through another sees; the alias is guarded), and attribute lookups
on them traced step by step, so `hasattr` and `getattr` with a default need no `hasattr` guard of
their own, except on an unset slot, which only such a guard can see being set."""

from __future__ import annotations

import torch

import pdyn
from tests.helpers import CountingBackend


class Config:
    def __init__(self, scale):
        self.scale = scale


class Holder:
    def __init__(self, config):
        self.config = config


class Slotted:
    __slots__ = ("a", "b")


def guard_text(optimized) -> str:
    return "\n".join(e.guard.source for e in optimized._pdyn_frame.cache.entries)


def test_a_store_through_one_path_is_read_through_another():
    def f(a, b, x):
        a.config.scale = 3
        return x * b.config.scale

    backend = CountingBackend()
    opt = pdyn.optimize(f, backend=backend)
    x = torch.randn(4)
    for shared in (True, True, False):
        runs = []
        for _ in range(2):  # eager, then compiled, each on fresh objects
            first = Config(2)
            pair = (Holder(first), Holder(first if shared else Config(2)))
            runs.append(pair)
        expected = f(*runs[0], x)
        got = opt(*runs[1], x)
        torch.testing.assert_close(got, expected)
        assert [h.config.scale for h in runs[1]] == [h.config.scale for h in runs[0]]
    assert pdyn.stats(opt)["compiles"] == 2  # two objects are not one: the alias guard fails once
    assert "is not" in guard_text(opt)


def test_hasattr_on_a_python_object_adds_no_hasattr_check():
    def f(cfg, x):
        y = x * getattr(cfg, "gain", 2)
        return y + 1 if hasattr(cfg, "scale") else y

    opt = pdyn.optimize(f, backend=CountingBackend())
    cfg, x = Config(5), torch.randn(3)
    torch.testing.assert_close(opt(cfg, x), f(cfg, x))
    assert "hasattr(cfg, '" not in guard_text(opt)  # generated checks quote names with '
    cfg.gain = 10  # the traced lookup found no `gain` in the instance dict: that check fails
    torch.testing.assert_close(opt(cfg, x), f(cfg, x))
    del cfg.scale
    torch.testing.assert_close(opt(cfg, x), f(cfg, x))
    assert pdyn.stats(opt)["compiles"] == 3


def test_an_unset_slot_is_guarded():
    def f(s, x):
        return x * s.a if hasattr(s, "a") else x - 1

    opt = pdyn.optimize(f, backend=CountingBackend())
    s, x = Slotted(), torch.randn(3)
    torch.testing.assert_close(opt(s, x), f(s, x))
    assert "hasattr(s, 'a')" in guard_text(opt)
    s.a = 4.0
    torch.testing.assert_close(opt(s, x), f(s, x))
    assert pdyn.stats(opt)["compiles"] == 2


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2.0


class TwoPaths(torch.nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.a, self.b = a, b

    def forward(self, x):
        self.a.scale = 3.0
        return x * self.b.scale


def test_a_submodule_shared_by_two_paths_is_one_tracker():
    x = torch.randn(3)
    shared = Scaled()
    eager = TwoPaths(Scaled(), None)
    eager.b = eager.a
    expected = eager(x)
    got = pdyn.optimize(TwoPaths(shared, shared), backend=CountingBackend())(x)
    torch.testing.assert_close(got, expected)
    assert shared.scale == 3.0
