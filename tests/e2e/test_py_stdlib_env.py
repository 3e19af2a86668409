"""The process environment and copying under pdyn: `os.environ` reads answered at trace time and
guarded (changing a variable recompiles), `copy.copy`/`copy.deepcopy` of containers, of objects
made in the trace and of input objects, `delattr` on objects made in the trace."""

from __future__ import annotations

import copy
import os

import pytest
import torch

import pdyn
from pdyn.guards.env_guards import EnvSnapshotGuard, EnvVarGuard
from tests.helpers import CountingBackend, check, check_calls
from tests.tracing import guards_of, trace

VAR = "PDYN_TEST_ENV_FLAG"


@pytest.fixture(autouse=True)
def _unset(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)


def run_under(fn, settings, *args):
    """`fn` optimized, called once per environment in `settings` (None unsets), each result
    compared with eager; returns (compiles, graphs)."""
    backend = CountingBackend()
    optimized = pdyn.optimize(fn, backend=backend)
    for value in settings:
        if value is None:
            os.environ.pop(VAR, None)
        else:
            os.environ[VAR] = value
        torch.testing.assert_close(optimized(*args), fn(*args))
    return pdyn.stats(optimized)["compiles"], len(backend.graphs), pdyn.stats(optimized)["eager_fallbacks"]


def by_get(x):
    if os.environ.get(VAR, "0") == "1":
        return x + 1
    return x - 1


def by_item(x):
    try:
        scale = float(os.environ[VAR])  # KeyError when unset: decided by the guard, caught here
    except KeyError:
        scale = 0.5
    return x * scale


def by_in(x):
    return x * 2 if VAR in os.environ else x * 3


def by_getenv(x):
    return x + len(os.getenv(VAR, ""))


@pytest.mark.parametrize("fn", [by_get, by_item, by_in, by_getenv])
def test_environ_reads_are_guarded(fn):
    x = torch.randn(4)
    # unset, set, set again (a hit), changed, unset again (a hit on the first entry)
    compiles, graphs, fallbacks = run_under(fn, [None, "1", "1", "2", None], x)
    assert (compiles, graphs, fallbacks) == (3, 3, 0)


def test_environ_guard_is_the_variable():
    tx = trace(by_get, torch.randn(2))
    assert [(g.name, g.value) for g in guards_of(tx, EnvVarGuard)] == [(VAR, None)]
    assert "os.environ.get('PDYN_TEST_ENV_FLAG') == None" in guards_of(tx, EnvVarGuard)[0].sentence()


def test_listing_the_environment_guards_all_of_it():
    def count(x):
        return x + len(os.environ) + sum(1 for k in os.environ.keys() if k == VAR)

    tx = trace(count, torch.randn(2))
    assert len(guards_of(tx, EnvSnapshotGuard)) == 1
    compiles, graphs, fallbacks = run_under(count, [None, None, "1", "1"], torch.randn(3))
    assert (compiles, graphs, fallbacks) == (2, 2, 0)


def test_environ_write_breaks_and_happens():
    def write(x):
        y = x + 1
        os.environ[VAR] = "written"
        return y * 2

    optimized = pdyn.optimize(write, backend=CountingBackend())
    x = torch.randn(3)
    torch.testing.assert_close(optimized(x), (x + 1) * 2)
    assert os.environ[VAR] == "written"
    explained = pdyn.explain(write)(x)
    assert explained.graph_break_count == 1


# -- copying -------------------------------------------------------------------------------------


class Box:
    def __init__(self, t, tags):
        self.t = t
        self.tags = tags

    def __eq__(self, other):  # how the harness compares inputs after the call
        return type(other) is type(self) and vars(other) == vars(self)


class Hooked(Box):
    def __deepcopy__(self, memo):
        return Hooked(self.t, ["hooked"])


def test_copy_of_a_list_and_dict_is_new():
    def f(x, items, table):
        a = copy.copy(items)
        a.append(x)
        b = copy.copy(table)
        b["new"] = x * 2
        return len(a), len(items), sorted(b), sorted(table), a[-1] + b["new"]

    check(f, torch.randn(3), [1, 2], {"k": 3})


def test_deepcopy_of_nested_containers_keeps_sharing():
    def f(x):
        inner = [0.5, 1]
        outer = {"a": inner, "b": inner, "t": (1, "s")}
        dup = copy.deepcopy(outer)
        dup["a"].append(2)
        return x * len(dup["b"]), len(inner), dup["a"] is dup["b"], dup["a"] is inner, dup["t"] == (1, "s")

    check(f, torch.randn(2))


def test_deepcopy_of_an_input_list_leaves_it_alone():
    def f(x, items):
        dup = copy.deepcopy(items)
        dup[0].append(x)
        return x + len(dup[0]), len(items[0])

    check(f, torch.randn(2), [[1, 2], 3])


def test_deepcopy_of_an_object_made_in_the_trace():
    def f(x):
        box = Box(x, ["a"])
        dup = copy.deepcopy(box)
        dup.tags.append("b")
        del_box = copy.copy(box)
        return type(dup) is Box, dup.t + 1, box.tags, dup.tags, del_box.tags is box.tags

    check(f, torch.randn(2))


def test_deepcopy_of_an_input_object_then_changed():
    def f(x, box):
        dup = copy.deepcopy(box)
        dup.tags.append("copied")
        dup.scale = 3
        delattr(dup, "scale")
        return x * len(dup.tags), box.tags, hasattr(dup, "scale"), dup.__class__ is Box

    box = Box(2, ["a", "b"])
    check(f, torch.randn(2), box)
    check_calls(f, (torch.randn(2), box), (torch.randn(3), Box(2, ["a", "b", "c"])))


def test_deepcopy_of_a_tensor_or_a_hooked_class_breaks_but_is_right():
    def f(x, value):
        dup = copy.deepcopy(value)  # a break: the copy is made eagerly, the rest resumes in a graph
        return x + 1, dup

    for value in (Hooked(1, ["a"]), [torch.ones(2)]):
        check(f, torch.randn(2), value, graphs=1)
        explained = pdyn.explain(f)(torch.randn(2), value)
        assert (explained.graph_break_count, explained.graph_count, explained.compiles) == (1, 1, 2)
        assert explained.break_reasons[0].key == "deepcopy"


def test_delattr_of_a_missing_attribute_raises_as_eager():
    def f(x):
        box = Box(x, [])
        delattr(box, "tags")
        try:
            delattr(box, "tags")
        except AttributeError:
            return x + 1
        return x

    check(f, torch.randn(2))


def test_a_number_plus_equals_a_tensor():
    def f(x):
        acc = 0
        acc += (x > 0).long() * 4
        return acc

    check(f, torch.randn(5))


def test_deepcopy_of_constants_is_the_constant():
    def f(x, box):
        dup = copy.deepcopy(box)
        return x.to(dup.t), dup.tags == box.tags, dup.tags is box.tags

    check(f, torch.randn(2), Box(torch.float64, (1, "a", slice(1, 2))))
