"""`match` statements: literal, capture, sequence, mapping and class patterns, guards, on ints,
strings, tuples, objects and tensor shapes; a shape pattern reads only the sizes it uses."""

from __future__ import annotations

import collections
import dataclasses

import torch

import pdyn
from tests.helpers import CountingBackend, check_calls


def _no_breaks(opt, compiles):
    stats = pdyn.stats(opt)
    assert stats["graph_breaks"] == 0 and stats["eager_fallbacks"] == 0 and stats["compiles"] == compiles, stats


def test_match_on_shape_rank_keeps_sizes_symbolic():
    def f(x):
        match x.shape:
            case (b, t, c):
                return x.sum(-1) * b
            case (b, t):
                return x + 1
            case _:
                return x

    calls = [(torch.randn(2, 3, 4),), (torch.randn(5, 6, 7),), (torch.randn(3, 3),), (torch.randn(4, 9),),
             (torch.randn(6),)]
    opt = check_calls(f, *calls, compiles=3)  # one entry per rank: no size of the matched shapes is pinned
    _no_breaks(opt, 3)


def test_match_shape_with_a_literal_reads_only_that_size():
    def f(x):
        match x.shape:
            case (1, n):
                return x * n
            case (b, n) if n > 4:
                return x - 1
            case _:
                return x + 1

    calls = [(torch.randn(3, 5),), (torch.randn(4, 6),), (torch.randn(5, 2),), (torch.randn(7, 3),)]
    check_calls(f, *calls)
    backend = CountingBackend()
    opt = pdyn.optimize(f, backend=backend, fullgraph=True)
    opt(torch.randn(3, 5))
    opt(torch.randn(4, 6))
    assert pdyn.stats(opt)["compiles"] == 1


def test_match_literals_captures_and_or_patterns():
    def f(x, mode, n):
        match mode:
            case "relu":
                y = x.relu()
            case "tanh" | "sigmoid" as name:
                y = getattr(torch, name)(x)
            case other:
                y = x * len(other)
        match n:
            case 0:
                return y
            case 1 | 2:
                return y + n
            case k if k > 10:
                return y - k
            case _:
                return y * 2

    x = torch.randn(4)
    opt = check_calls(f, (x, "relu", 0), (x, "tanh", 1), (x, "sigmoid", 2), (x, "abc", 11), (x, "relu", 5))
    assert pdyn.stats(opt)["graph_breaks"] == 0 and pdyn.stats(opt)["eager_fallbacks"] == 0


@dataclasses.dataclass
class Box:
    w: int
    h: int


Pair = collections.namedtuple("Pair", "left right")


class Plain:
    def __init__(self, kind):
        self.kind = kind

    def __eq__(self, other):  # the harness compares the arguments after each call
        return type(other) is Plain and other.kind == self.kind


def test_match_class_patterns_dataclass_namedtuple_keywords():
    def f(x, obj):
        match obj:
            case Box(1, h):
                return x * h
            case Box(w=w, h=3):
                return x + w
            case Pair(a, b):
                return x * a + b
            case Plain(kind="double"):
                return x * 2
            case int(v):
                return x - v
            case _:
                return x

    x = torch.randn(3)
    opt = check_calls(f, (x, Box(1, 4)), (x, Box(2, 3)), (x, Pair(2, 5)), (x, Plain("double")), (x, Plain("x")),
                      (x, 7), (x, Box(5, 5)))
    assert pdyn.stats(opt)["graph_breaks"] == 0 and pdyn.stats(opt)["eager_fallbacks"] == 0


def test_match_class_pattern_on_objects_made_in_the_trace():
    def f(x, n):
        obj = Box(n, 2) if n > 2 else Pair(x, n)
        match obj:
            case Box(w, h):
                return x * w * h
            case Pair(t, k):
                return t + k

    opt = check_calls(f, (torch.randn(2), 1), (torch.randn(2), 5))
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_match_sequences_and_mappings():
    def f(x, cfg, dims):
        match dims:
            case [a]:
                y = x * a
            case [a, *rest]:
                y = x * a + len(rest)
            case _:
                y = x
        match cfg:
            case {"scale": s, "shift": t}:
                return y * s + t
            case {"scale": s, **rest}:
                return y * s + len(rest)
            case {}:
                return y
        return -y

    x = torch.randn(3)
    opt = check_calls(f, (x, {"scale": 2.0, "shift": 1.0}, [3]), (x, {"scale": 3.0, "a": 1, "b": 2}, (2, 4, 5)),
                      (x, {}, []), (x, {"scale": 2.0, "shift": 1.0}, "ab"), (x, [1], [1]))
    assert pdyn.stats(opt)["graph_breaks"] == 0 and pdyn.stats(opt)["eager_fallbacks"] == 0


def test_match_class_errors_are_eagers():
    def f(x, obj):
        match obj:
            case Box(1, 2, 3):
                return x
        return x + 1

    check_calls(f, (torch.randn(2), Box(1, 2)))
