"""User list subclasses (transformers' LogitsProcessorList / StoppingCriteriaList), inspect.signature
read by library code, mapping proxies, and sets changed in place: each traced without a break,
compared with eager."""

from __future__ import annotations

import inspect
import types

import pytest
import torch

import pdyn
from tests.helpers import check, check_calls


class Pipeline(list):
    """A list of callables applied in turn, with a Python __call__ and an attribute."""

    def __init__(self, *fns):
        super().__init__(fns)
        self.calls = 0

    def __call__(self, x):
        for fn in self:
            x = fn(x)
        return x


class Logged(list):
    """A list whose append is Python (and calls list's own)."""

    def append(self, item):
        self.log = getattr(self, "log", 0) + 1
        super().append(item)


def test_a_user_list_made_in_the_trace_is_filled_iterated_and_returned_as_its_class():
    def f(x):
        p = Pipeline(torch.relu)
        p.append(torch.sigmoid)
        p.insert(0, torch.neg)
        p.extend([torch.tanh])
        p.calls += 1
        return p(x), len(p), p.calls, type(p).__name__, p[1:], p.index(torch.sigmoid)

    check(f, torch.randn(4))


def test_a_user_list_keeps_its_python_append_and_builds_as_its_class():
    def f(x):
        items = Logged()
        items.append(x + 1)
        items.append(x * 2)
        list.append(items, x)        # list's own append, past the Python one
        return items, items.log, sum(items), isinstance(items, list), items == list(items)

    out = check(f, torch.randn(3))
    assert pdyn.stats(out)["graph_breaks"] == 0


def test_a_user_list_input_is_read_by_length_and_items_and_its_length_is_guarded():
    def f(x, p):
        return p(x), len(p), torch.relu in p

    opt = check_calls(f, (torch.randn(3), Pipeline(torch.relu)), (torch.randn(5), Pipeline(torch.relu)),
                      (torch.randn(5), Pipeline(torch.relu, torch.sigmoid)), compiles=2)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_changing_a_user_list_read_from_the_frame_is_a_break_and_still_right():
    def f(x, p):
        p.append(torch.sigmoid)
        return p(x)

    opt = check_calls(f, (torch.randn(3), Pipeline(torch.relu)), (torch.randn(4), Pipeline(torch.relu)))
    assert pdyn.stats(opt)["graph_breaks"] >= 1


def test_list_methods_raise_what_python_raises_on_a_user_list():
    def f(x):
        p = Pipeline()
        try:
            p.remove(torch.relu)
        except ValueError as e:
            return x + 1, str(e)
        return x

    check(f, torch.randn(2))


def forward_like(input_ids, attention_mask=None, *, logits_to_keep=0, **kwargs):
    return input_ids


class Model(torch.nn.Module):
    def forward(self, x, mask=None, *, cache=None):
        return x


def test_inspect_signature_of_a_function_and_of_a_bound_method_is_read_without_a_break():
    model = Model()

    def f(x):
        params = inspect.signature(forward_like).parameters
        names = set(params)
        mine = inspect.signature(model.forward).parameters
        kinds = [p.kind for p in params.values()]
        has = "logits_to_keep" in set(params.keys())
        default = params["attention_mask"].default
        return x + len(names) + has + len(mine), list(mine), kinds[-1] == inspect.Parameter.VAR_KEYWORD, default

    out = check(f, torch.randn(3))
    assert pdyn.stats(out)["graph_breaks"] == 0


def test_a_mapping_proxy_is_a_live_read_only_view():
    def f(x):
        d = {"a": 1}
        view = types.MappingProxyType(d)
        d["b"] = 2
        try:
            view["c"] = 3
        except TypeError as e:
            err = str(e)
        return x + len(view) + view["b"], sorted(view), err, "b" in view, dict(view.items())

    check(f, torch.randn(2))


def test_sets_changed_in_place_keep_every_change():
    def f(x):
        s = {1, 2, 3, 4}
        s.discard(2)
        s.remove(3)
        s.difference_update({4})
        t = {7, 8}
        t.clear()
        u = {1, 2}
        u |= {5}
        u &= {1, 5, 9}
        u -= {9}
        u ^= {6}
        return x + len(s) * 1000 + len(t) * 100 + sum(u), sorted(u), s <= {1}, u.isdisjoint({2})

    check(f, torch.randn(2))


def test_set_methods_raise_what_python_raises():
    def f(x):
        s = {1}
        try:
            s.remove(5)
        except KeyError as e:
            return x + 1, e.args
        return x

    check(f, torch.randn(2))


@pytest.mark.parametrize("n", [3, 6])
def test_isin_and_bucketize_keep_sizes_symbolic(n):
    def f(x, t, b):
        return torch.isin(x, t) & (torch.bucketize(x.float(), b) > 0), torch.isin(x, t, invert=True)

    calls = [(torch.randint(0, 9, (m, 2)), torch.tensor([1, 3]), torch.tensor([2.0, 5.0])) for m in (n, n + 1, n + 2)]
    check_calls(f, *calls, compiles=1)


def test_list_index_compares_as_python_does_so_an_equal_tensor_earlier_in_the_list_is_found():
    def f(a, b):
        c = a + b
        items = [a, b]
        return c * items.index(b), [1, 2].index(2)

    # eager: `a == b` is a one-element bool tensor, True, so index() answers 0, not 1; pdyn cannot
    # decide a tensor's `==` at trace time, so the call is a graph break
    opt = check(f, torch.ones(1), torch.ones(1), graphs=2)
    assert pdyn.stats(opt)["graph_breaks"] == 1


def test_index_and_remove_raise_pythons_messages_on_lists_tuples_and_deques():
    import collections

    def attempt(fn):
        try:
            fn()
        except ValueError as e:
            return str(e)
        return None

    def f(x):
        return x + 1, [attempt(lambda: [1].index(5)), attempt(lambda: [1].remove(5)),
                       attempt(lambda: (1,).index(5)), attempt(lambda: collections.deque([1]).index(5)),
                       attempt(lambda: collections.deque([1]).remove(5)), attempt(lambda: ["a"].index("b"))]

    check(f, torch.randn(2))
