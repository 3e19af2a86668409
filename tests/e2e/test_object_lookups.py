"""Python objects reached from the frame: one tracker per object however it is reached (a store
through one path is what a read through another sees; the alias is guarded), and attribute lookups
on them traced step by step, so `hasattr` and `getattr` with a default need no `hasattr` guard of
their own, except on an unset slot, which only such a guard can see being set."""

from __future__ import annotations

import collections
import re

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


def test_objects_traced_as_two_are_guarded_distinct_once_one_is_changed():
    def f(a, b, x):
        a.scale = 3
        return x * b.scale

    opt = pdyn.optimize(f, backend=CountingBackend())
    x = torch.randn(4)
    for shared in (False, True, False):   # traced as two first: the same object later must not hit
        eager_pair, pair = [(c, c if shared else Config(2)) for c in (Config(2), Config(2))]
        torch.testing.assert_close(opt(*pair, x), f(*eager_pair, x))
        assert [c.scale for c in pair] == [c.scale for c in eager_pair]
    assert pdyn.stats(opt)["compiles"] == 2
    assert "if a is b:" in guard_text(opt)


CONFIG = {"scale": 2}
SIZES = [1]


def test_a_global_container_changed_through_an_argument_is_read_through_the_global():
    def f(d, sizes, x):
        d["scale"] = 3
        sizes.append(5)
        return x * CONFIG["scale"] + len(SIZES)

    opt = pdyn.optimize(f, backend=CountingBackend())
    x = torch.randn(4)
    results = []
    for fn in (f, opt):
        CONFIG["scale"], SIZES[:] = 2, [1]
        results.append((fn(CONFIG, SIZES, x), dict(CONFIG), list(SIZES)))
    torch.testing.assert_close(results[1][0], results[0][0])
    assert results[1][1:] == results[0][1:]


class Output(collections.OrderedDict):
    """A ModelOutput-like dict whose attributes are set too."""


def test_a_dict_subclass_changed_through_one_path_is_read_through_another():
    def f(outputs, x):
        outputs[0].loss = x.sum()
        return x * 2 if outputs[1].loss is None else x + outputs[1].loss

    opt = pdyn.optimize(f, backend=CountingBackend())
    x = torch.randn(4)
    for shared in (True, False, True):
        fresh = []
        for _ in range(2):
            first = Output(logits=x)
            first.loss = None
            second = first if shared else Output(logits=x)
            second.loss = None
            fresh.append([first, second])
        torch.testing.assert_close(opt(fresh[1], x), f(fresh[0], x))
    assert pdyn.stats(opt)["compiles"] == 2


def test_many_objects_of_one_type_are_guarded_distinct_in_one_check():
    def f(layers, x):
        layers[0].scale = 5
        return x * sum(layer.scale for layer in layers)

    opt = pdyn.optimize(f, backend=CountingBackend())
    x = torch.randn(3)
    for shared in (False, True):   # traced as four objects; then the first one passed twice
        made = []
        for _ in range(2):
            first = Config(2)
            made.append([first, first if shared else Config(2), Config(2), Config(2)])
        torch.testing.assert_close(opt(made[1], x), f(made[0], x))
    assert pdyn.stats(opt)["compiles"] == 2
    assert "len({id(" in guard_text(opt)  # one check over the group, not one per pair


class _Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        if hasattr(self, "groups"):  # transformers' attention asks this of every layer
            x = x * 2
        return self.proj(x)


def _setters():
    return {
        "instance": lambda m: setattr(m, "groups", 2),
        "class": lambda m: setattr(type(m), "groups", 2),
        "parameter": lambda m: m.register_parameter("groups", torch.nn.Parameter(torch.ones(1))),
        "buffer": lambda m: m.register_buffer("groups", torch.tensor(2)),
        "submodule": lambda m: m.add_module("groups", torch.nn.Identity()),
    }


def test_a_module_attribute_found_missing_is_checked_where_module_getattr_looks_and_set_later_recompiles():
    for where, set_it in _setters().items():
        cls = type("Attention", (_Attention,), {})  # a class of its own: the "class" case sets on it
        model = cls()
        backend = CountingBackend()
        f = pdyn.optimize(model.forward, backend=backend)
        x = torch.randn(3, 4)
        with torch.no_grad():
            torch.testing.assert_close(f(x), model(x))
            # no `hasattr` call in the checks: it would raise (and catch) an AttributeError per call
            assert not re.search(r"^ *if (not )?hasattr\(", guard_text(f.__func__), re.M), where
            set_it(model)
            torch.testing.assert_close(f(x), model(x))
        assert f.__func__._pdyn_frame.cache.counters["compiles"] == 2, where
