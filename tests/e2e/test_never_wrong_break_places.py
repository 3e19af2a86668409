"""Never wrong with graph breaks in unusual places: Python side effects around a break (in callees,
blocks, handlers, comprehensions, dunders), compared with eager call by call, the order of the
effects recorded in a list."""

from __future__ import annotations

import io

import pytest
import torch

import pdyn

pytestmark = pytest.mark.filterwarnings("ignore:pdyn")

SINK = io.StringIO()


@pytest.fixture(autouse=True)
def _fresh():
    pdyn.reset()
    yield
    pdyn.reset()


class Registry:
    items: list = []
    table: dict = {}

    def record(self, v):
        self.items.append(v)          # the class's list, through a fresh instance
        return len(self.items)


class Derived(Registry):
    def record(self, v):
        super().items.append(-v)      # through super(): still the class's list
        return super().record(v)


def writes_class_containers(x, log):
    Registry.items.append(x.shape[0])
    Registry.table["n"] = x.shape[0]
    log.append(list(Registry.items))
    print("break", file=SINK)
    n = Derived().record(1)
    type(Registry()).items.append(2)
    log.append((n, list(Registry.items), dict(Registry.table)))
    return x + n


@pytest.mark.parametrize("calls", [1, 3])
def test_a_list_or_dict_held_by_a_class_is_written_in_place_around_a_break(calls):
    """A list or dict that is a class attribute is the class's own object: appends and item
    stores (through the class, a fresh instance, `type(obj)` or `super()`) are replayed on it and
    seen by later reads in the trace, not made on a copy the trace threw away."""
    runs = []
    for run in range(2):
        Registry.items, Registry.table = [], {}
        fn = pdyn.optimize(writes_class_containers, backend="eager") if run else writes_class_containers
        logs = []
        for size in (2, 2, 3)[:calls]:
            log = []
            out = fn(torch.ones(size), log)
            logs.append((out.tolist(), log))
        runs.append((logs, Registry.items, Registry.table))
    assert runs[1] == runs[0]


def appends_to_class_list(x):
    Registry.items.append(1)
    return x + 1, len(Registry.items)


def test_an_append_to_a_class_list_without_a_break_reaches_the_list():
    Registry.items = []
    optimized = pdyn.optimize(appends_to_class_list, backend="eager")
    assert [optimized(torch.ones(2))[1] for _ in range(3)] == [1, 2, 3]
    assert Registry.items == [1, 1, 1]


class Settings:
    def __init__(self):
        self.count = 0
        self.seen = []


class Owner:
    settings = Settings()


def writes_a_class_held_object(x):
    Owner.settings.count += 1
    Owner.settings.seen.append(x.shape[0])
    print("break", file=SINK)
    Owner().settings.seen.append(-x.shape[0])   # a fresh instance finds the same object
    return x + Owner.settings.count, list(Owner.settings.seen)


def test_an_object_held_by_a_class_is_written_in_place_around_a_break():
    runs = []
    for run in range(2):
        Owner.settings = Settings()
        fn = pdyn.optimize(writes_a_class_held_object, backend="eager") if run else writes_a_class_held_object
        outs = [(out.tolist(), seen) for out, seen in (fn(torch.ones(s)) for s in (2, 2, 3))]
        runs.append((outs, Owner.settings.count, Owner.settings.seen))
    assert runs[1] == runs[0]
