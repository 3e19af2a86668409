"""Writes in Triton-lowered graphs: a write to the graph's own tensor becomes its out-of-place op
(no torch call), a write to memory others may see (an input, a view) runs as one torch call in
order, on live tensors; lazy values that read the old contents are stored before it. Each test
compares outputs and the inputs' contents after the call with eager, and lists the torch calls."""

from __future__ import annotations

import torch

import pdyn
from tests.backends.util import DEVICE, Recorder, assert_matches, randn


def _run(fn, *args, calls=1):
    """fn through pdyn+Triton on copies of `args` (twice: a second call reuses the entry) and
    eagerly on other copies: outputs and the inputs after the call are equal; the graph compiled
    (no whole-graph torch run); returns its torch calls as (op, kind)."""
    rec = Recorder()
    compiled = pdyn.optimize(fn, backend=rec)
    for _ in range(calls):
        mine = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        theirs = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        assert_matches(compiled(*mine), fn(*theirs))
        for m, t in zip(mine, theirs):
            if isinstance(t, torch.Tensor):
                assert torch.equal(m, t), "an input's contents differ from eager's after the call"
    assert pdyn.stats()["graphs_on_torch"] == 0
    return [(e.op, e.kind) for e in rec.last.externs]


def test_an_iadd_on_the_graphs_own_tensor_is_its_out_of_place_op():
    def f(a, b):
        x = a * 2
        x += b
        x *= 3
        return x.sum(-1), x
    assert _run(f, randn(3, 5), randn(3, 5), calls=2) == []


def test_an_iadd_casts_into_the_written_dtype():
    def f(a, b):
        x = a.half() * 2
        x += b  # float32 b: eager computes in float32 and casts into x
        return x
    assert _run(f, randn(4, 8), randn(4, 8)) == []


def test_a_write_to_an_input_runs_in_order_and_values_read_before_keep_the_old_contents():
    def f(x, y):
        before = x * 2 + y  # lazy: must be computed before the write
        total = x.sum(-1)
        x.add_(y)
        return before, total, x.sum(-1), x * 1
    assert _run(f, randn(3, 6), randn(3, 6), calls=2) == [("add_", "write")]


def test_a_slice_write_into_an_input_cache_shows_through_its_views():
    def f(cache, k):
        view = cache[:, :2]
        cache[:, 2:4] = k * 2
        view.mul_(0.5)
        return cache.sum(0), view + 1
    assert _run(f, randn(3, 6), randn(3, 2)) == [("getitem", "fallback"), ("setitem", "write"), ("mul_", "write")]


def test_index_copy_into_a_cache_then_read():
    def f(cache, pos, k):
        cache.index_copy_(1, pos, k)
        return (cache * 2).sum(-1)
    assert _run(f, randn(2, 5, 4), torch.tensor([1, 3], device=DEVICE), randn(2, 2, 4)) == [("index_copy_", "write")]


def test_a_write_through_a_view_of_a_computed_tensor_is_seen_by_its_other_views():
    def f(a):
        y = a * 2
        first, rows = y[0], y.t()
        first.fill_(7.0)
        return rows + 1, y.sum()
    # the view group runs with torch on live tensors; the sum and the add read them after the write
    assert _run(f, randn(3, 4)) == [("mul", "fallback"), ("getitem", "fallback"), ("t", "fallback"),
                                    ("fill_", "write")]


def test_an_in_place_op_torch_rejects_raises_as_eager():
    def f(a, b):
        x = a * 2
        x += b
        return x
    compiled = pdyn.optimize(f, backend=Recorder())
    a, b = torch.arange(6, device=DEVICE).reshape(2, 3), randn(2, 3)
    try:
        f(a, b)
    except RuntimeError as e:
        expected = type(e)
    try:
        compiled(a, b)
    except RuntimeError as e:
        assert type(e) is expected
    else:
        raise AssertionError("pdyn returned where eager raised")


def test_a_write_a_failed_compile_sends_to_torch_runs_in_memory():
    from pdyn.backends.triton import _entry, compile_graph

    graphs = []

    def backend(gm, example_inputs):  # as a retry after a failure blamed on the write
        iadd = next(n for n in gm.graph.nodes if n.name == "iadd")
        graphs.append(compile_graph(gm, example_inputs, {iadd: "planted failure"}))
        return _entry(graphs[-1])

    def f(a, b):
        x = a * 2
        x += b
        return x.sum(-1), x + 1
    a, b = randn(3, 5), randn(3, 5)
    assert_matches(pdyn.optimize(f, backend=backend)(a, b), f(a, b))
    assert [(e.op, e.kind, e.reason) for e in graphs[0].externs] == [
        ("mul", "fallback", "may share memory with a tensor the graph writes: run on live tensors"),
        ("iadd", "write", "planted failure")]
