"""A namedtuple class made inside a compiled function has the `__module__` eager gives it (the
traced code's module, not pdyn's), by every form; the functional `typing.NamedTuple` form traces
in one graph (issue 27, item 5)."""

from __future__ import annotations

import collections
import typing

import pytest
import torch

import pdyn
from tests.helpers import check_calls


def collections_form(x):
    P = collections.namedtuple("P", ["a", "b"], defaults=[2])
    p = P(x)
    return p.a * p.b, P.__module__, P.__qualname__, repr(P(1, 2))


def typing_form(x):
    Q = typing.NamedTuple("Q", [("a", int), ("t", torch.Tensor)])
    q = Q(3, x)
    return q.t + q.a, Q.__module__, Q.__annotations__ == {"a": int, "t": torch.Tensor}, q._fields


def class_form(x):
    class R(typing.NamedTuple):
        a: int

    return x + R(2).a, R.__module__, R.__qualname__


def run(fn):
    calls = [(torch.randn(3),), (torch.randn(5),), (torch.randn(5),)]
    opt = check_calls(fn, *calls, compiles=1)
    assert opt(torch.randn(2))[1] == __name__ != "pdyn.hook.eval_frame"
    return pdyn.stats(opt)


def test_collections_namedtuple_module_is_the_callers():
    stats = run(collections_form)
    assert (stats["graphs"], stats["graph_breaks"]) == (1, 0)


def test_typing_namedtuple_functional_form_traces_once_with_the_callers_module():
    stats = run(typing_form)
    assert (stats["compiles"], stats["graphs"], stats["graph_breaks"]) == (1, 1, 0)


@pytest.mark.filterwarnings("ignore:pdyn.*no graph was compiled")
def test_typing_namedtuple_class_form_module_is_the_callers():
    stats = run(class_form)
    assert (stats["compiles"], stats["graphs"]) == (1, 0)  # LOAD_BUILD_CLASS: the frame runs eagerly
