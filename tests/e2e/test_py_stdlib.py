"""collections.defaultdict and deque, operator's getters, itertools.starmap/groupby and the rest
of the standard library helpers model code uses: outputs vs eager, no breaks, compiles."""

from __future__ import annotations

import collections
import copy
import functools
import itertools
import math
import operator

import torch

import pdyn
from tests.helpers import check_calls


def _no_breaks(opt, compiles=1):
    stats = pdyn.stats(opt)
    assert stats["graph_breaks"] == 0 and stats["eager_fallbacks"] == 0 and stats["compiles"] == compiles, stats


def _captured(fn, *calls, compiles):
    """check_calls, no break or fallback, then `fullgraph=True` captures the first call whole."""
    _no_breaks(check_calls(fn, *calls, compiles=compiles))
    args = copy.deepcopy(calls[0])
    pdyn.optimize(fn, backend="eager", fullgraph=True)(*args)


def _shapes(*sizes):
    return [(torch.randn(n),) for n in sizes]


def test_defaultdict_made_in_the_trace_and_returned():
    def f(x):
        d = collections.defaultdict(list)
        d["a"].append(x)
        d["b"].append(x * 2)
        d["a"].append(x + 1)
        counts = collections.defaultdict(int)
        for k in ("u", "v", "u"):
            counts[k] += 1
        lazy = collections.defaultdict(lambda: 7)
        nested = collections.defaultdict(dict)
        nested["n"]["m"] = x
        return d, counts, lazy["z"], dict(lazy), nested, d.get("zz"), "zz" in d, counts.default_factory is int

    _captured(f, *_shapes(2, 3, 5), compiles=1)
    out = pdyn.optimize(f, backend="eager")(torch.randn(2))
    assert type(out[0]) is collections.defaultdict and out[0].default_factory is list
    out[0]["new"].append(1)  # the rebuilt one still has its factory
    assert out[0]["new"] == [1]


def test_defaultdict_without_factory_raises_key_error():
    def f(x):
        d = collections.defaultdict(None, {"a": 1})
        try:
            return x + d["b"]
        except KeyError:
            return x + d["a"]

    check_calls(f, *_shapes(2, 3))


def test_defaultdict_input_reads_and_missing_key_insert_replayed():
    def f(x, d):
        return x + d["a"] + d["missing"], "a" in d, len(d)

    calls = [(torch.randn(2), collections.defaultdict(int, a=2)), (torch.randn(3), collections.defaultdict(int, a=5))]
    _captured(f, *calls, compiles=1)
    d = collections.defaultdict(int, a=2)
    pdyn.optimize(f, backend="eager")(torch.randn(2), d)
    assert dict(d) == {"a": 2, "missing": 0}


def test_deque_methods_maxlen_iteration():
    def f(x):
        q = collections.deque(maxlen=2)
        q.append(x)
        q.append(x + 1)
        q.append(x + 2)  # drops x
        r = collections.deque([1, 2, 3])
        r.appendleft(0)
        r.extend([4, 5])
        r.extendleft([-1])
        a, b = r.pop(), r.popleft()
        r.rotate(2)
        total = sum(t.sum() for t in q)
        return (list(q), len(q), q[0], q[-1], r.index(3), a, b, [v for v in r], list(r), q.maxlen, 2 in r,
                total, bool(collections.deque()))

    _captured(f, *_shapes(2, 3, 4), compiles=1)


def test_deque_returned_and_errors():
    def f(x):
        q = collections.deque([x], maxlen=3)
        q.appendleft(x * 2)
        return q

    opt = pdyn.optimize(f, backend="eager")
    out = opt(torch.ones(2))
    assert type(out) is collections.deque and out.maxlen == 3 and len(out) == 2
    torch.testing.assert_close(out[0], torch.full((2,), 2.0))

    def g(x):
        q = collections.deque()
        try:
            q.pop()
        except IndexError:
            return x + 1
        return x

    check_calls(g, *_shapes(2))


def test_deque_input_read_only_and_mutation_breaks_cleanly():
    def f(x, q):
        return x * q[0] + len(q) + q[-1], q.maxlen, list(q)

    calls = [(torch.randn(2), collections.deque([2, 3], maxlen=4)), (torch.randn(3), collections.deque([5, 6], maxlen=4))]
    _captured(f, *calls, compiles=1)

    def g(x, q):
        q.append(x)
        return x + 1

    def same(actual, expected):
        assert len(actual) == len(expected)

    opt = pdyn.optimize(g, backend="eager")
    q1, q2 = collections.deque([1]), collections.deque([1])
    torch.testing.assert_close(opt(torch.ones(2), q1), g(torch.ones(2), q2))
    same(q1, q2)


def test_operator_getters_and_methodcaller():
    first_two = operator.itemgetter(0, 1)

    def f(x, pairs):
        g = operator.itemgetter(1)
        a = operator.attrgetter("shape")
        nested = operator.attrgetter("T.shape", "ndim")
        call = operator.methodcaller("sum", 0)
        ordered = sorted(pairs, key=operator.itemgetter(1))
        return (g(pairs[0]), a(x), nested(x), call(x), ordered, first_two(x.shape), g(x),
                max(pairs, key=g), min(pairs, key=lambda p: -p[0]), min([], default=x.shape[0]))

    calls = [(torch.randn(3, 4), [(1, 5), (2, 3), (3, 4)]), (torch.randn(5, 6), [(1, 5), (2, 3), (3, 4)])]
    _captured(f, *calls, compiles=1)


def test_itertools_starmap_groupby_and_friends():
    def f(x):
        s = list(itertools.starmap(operator.mul, [(2, 3), (4, 5)]))
        scaled = list(itertools.starmap(lambda t, k: t * k, [(x, 2), (x, 3)]))
        groups = [(k, list(g)) for k, g in itertools.groupby([1, 1, 2, 3, 3, 3])]
        by_len = [(k, len(list(g))) for k, g in itertools.groupby(["a", "b", "cc", "dd", "e"], key=len)]
        chained = list(itertools.chain([1, 2], (3,)))
        window = list(itertools.islice(range(10), 2, 8, 2))
        longest = list(itertools.zip_longest([1, 2], [3], fillvalue=0))
        prod = list(itertools.product([1, 2], [3, 4]))
        acc = list(itertools.accumulate(x.shape))
        pairs = list(itertools.pairwise(x.shape))
        red = functools.reduce(operator.mul, x.shape)
        return s, scaled, groups, by_len, chained, window, longest, prod, acc, pairs, x * red

    _captured(f, *[(torch.randn(n, 3),) for n in (2, 4, 5)], compiles=1)


def test_math_on_sizes_and_frozenset_and_namedtuple_made_inside():
    def f(x):
        n = x.shape[0]
        P = collections.namedtuple("P", ["a", "b"])
        p = P(x, n)
        fs = frozenset([1, 2, 2])
        return (x * math.prod(x.shape), math.ceil(n / 2), math.floor(n / 3), math.sqrt(4), p.a + p.b,
                len(fs), 2 in fs, fs | {3}, math.gcd(6, 4), math.isfinite(1.0))

    _captured(f, *[(torch.randn(n, 3),) for n in (4, 6, 8)], compiles=1)


def test_in_over_sizes_specializes_only_what_the_comparison_needs():
    def f(x, y):
        if x.shape[0] in (y.shape[0], y.shape[1]):
            return x * 2
        return x

    calls = [(torch.randn(3), torch.randn(3, 5)), (torch.randn(4), torch.randn(4, 7)), (torch.randn(6), torch.randn(6, 9))]
    opt = check_calls(f, *calls, compiles=1)
    _no_breaks(opt)
