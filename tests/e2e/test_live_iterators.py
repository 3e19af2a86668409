"""Iterators read their container as they go, as Python's do: `enumerate`, `zip` and `reversed`
over a list the loop changes, a loop over an input list that breaks the graph and shrinks it, and
dicts and sets changed while iterated raise Python's RuntimeError."""

from __future__ import annotations

import collections
import itertools

import pytest
import torch

import pdyn
from tests.helpers import CountingBackend


def run_both(fn, make_args):
    """(eager result, compiled result), each on fresh arguments; a raised error is the result."""
    out = []
    for f in (fn, pdyn.optimize(fn, backend=CountingBackend())):
        try:
            out.append(f(*make_args()))
        except RuntimeError as e:
            out.append(("RuntimeError", str(e)))
    return out


def test_enumerate_zip_and_reversed_see_the_list_as_it_is_then():
    def f(x):
        a = [1, 2]
        z = zip(a, a)
        a.append(3)
        b = [1, 2]
        e = enumerate(b, 5)
        b.append(3)
        c = [1, 2, 3]
        r = reversed(c)
        c.pop()
        grown, out = [1, 2], []
        for i, v in enumerate(grown):
            out.append(v)
            if len(grown) < 4:
                grown.append(v + 10)
        return x + 1, list(z), list(e), list(r), out

    eager, compiled = run_both(f, lambda: (torch.ones(2),))
    torch.testing.assert_close(compiled[0], eager[0])
    assert compiled[1:] == eager[1:] == ([(1, 1), (2, 2), (3, 3)], [(5, 1), (6, 2), (7, 3)], [], [1, 2, 11, 12])


def test_zip_strict_raises_as_python_does():
    def f(x, a, b):
        return x, list(zip(a, b, strict=True))

    for a, b in (([1], [1, 2]), ([1, 2], [1])):
        opt = pdyn.optimize(f, backend=CountingBackend())
        with pytest.raises(ValueError) as eager:
            f(torch.ones(1), a, b)
        with pytest.raises(ValueError) as compiled:
            opt(torch.ones(1), a, b)
        assert str(compiled.value) == str(eager.value)


def test_a_loop_that_breaks_the_graph_and_shrinks_its_input_list():
    def f(items, x):
        for v in items:      # the item after a removed one is skipped, as CPython's list iterator does
            if v == 2:
                items.remove(v)   # on symbolic ints: a graph break inside the loop
        return x * len(items)

    eager, compiled = [], []
    for fn, out in ((f, eager), (pdyn.optimize(f, backend=CountingBackend()), compiled)):
        items = [1, 2, 2, 3]
        out.append((fn(items, torch.ones(2)), items))
    torch.testing.assert_close(compiled[0][0], eager[0][0])
    assert compiled[0][1] == eager[0][1] == [1, 2, 3]


@pytest.mark.parametrize("make", [dict, collections.OrderedDict])
def test_a_dict_changed_while_iterated_raises(make):
    def grows(d, x):
        for k in d:
            d[k + "x"] = 1
        return x

    def swaps(d, x):
        for k in d:
            del d[k]
            d[k + "2"] = 0
        return x

    def view(d, x):
        it = iter(d.items())
        d["c"] = 2
        return list(it), x

    for fn in (grows, swaps, view):
        eager, compiled = run_both(fn, lambda: (make(a=1, b=2), torch.ones(1)))
        assert compiled == eager and eager[0] == "RuntimeError"


def test_a_set_changed_while_iterated_raises_and_values_may_change():
    def grows(x):
        s = {1, 2}
        for v in s:
            s.add(v + 10)
        return x

    def updates(d, x):
        for k in d:
            d[k] += 1   # a value, not a key: allowed
        return x + d["a"]

    assert run_both(grows, lambda: (torch.ones(1),)) == [("RuntimeError", "Set changed size during iteration")] * 2
    eager, compiled = run_both(updates, lambda: ({"a": 1, "b": 2}, torch.ones(1)))
    torch.testing.assert_close(compiled, eager)


def test_itertools_iterators_read_their_list_when_consumed_not_when_made():
    # chain, islice, zip_longest and pairwise were lists of the items when made
    def f(x, xs):
        c = itertools.chain(xs, [10.0])
        xs.append(5.0)
        s = itertools.islice(xs, 0, None)
        xs.append(6.0)
        z, p = itertools.zip_longest(xs, [1.0]), itertools.pairwise(xs)
        xs.append(7.0)
        return x + 1, list(c), list(s), list(z), list(p), list(itertools.islice(xs, 1, 4, 2)), list(itertools.islice(xs, 5, None))

    eager, compiled = run_both(f, lambda: (torch.ones(2), [1.0]))
    torch.testing.assert_close(compiled[0], eager[0])
    assert compiled[1:] == eager[1:]
    assert eager[1] == [1.0, 5.0, 6.0, 7.0, 10.0]
