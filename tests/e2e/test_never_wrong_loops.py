"""A loop whose body breaks the graph on every iteration: each iteration's resume function is called
from the previous one's compiled code, so nesting grows with the trip count. Past a limit the rest
of the loop runs eagerly, as eager runs it, instead of a RecursionError eager never raises
(fuzz seed 435)."""

from __future__ import annotations

import torch

import pdyn
from pdyn.hook import eval_frame
from tests.helpers import check_calls


def test_a_long_loop_with_a_break_in_its_body_matches_eager():
    def f(x):
        acc = x
        i = 0
        while i < x.size(0):
            acc = acc + x.sum()
            pdyn.graph_break()
            i += 1
        return acc

    check_calls(f, (torch.randn(3),), (torch.randn(4 * eval_frame.NESTING_LIMIT),),
                (torch.randn(30 * eval_frame.NESTING_LIMIT),))


def test_a_short_loop_with_a_break_stays_compiled():
    def f(x):
        for _ in range(3):
            x = x * 2
            pdyn.graph_break()
        return x

    opt = check_calls(f, (torch.randn(3),), (torch.randn(3),))
    assert pdyn.stats(opt)["eager_fallbacks"] == 0 and pdyn.stats(opt)["graph_breaks"] == 1
