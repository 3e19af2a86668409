"""The counters behind pdyn.stats() tell whether code ran compiled: graphs, ops_captured,
frames_without_graph, eager_fallbacks; and the one warning for a function that keeps running with no
graph (pdyn/base/logs.py for the names, pdyn/hook/eval_frame.py counts)."""

from __future__ import annotations

import warnings

import torch

import pdyn
from pdyn.base.config import Config
from tests.helpers import assert_same


def prints_then_returns(x):
    print("step")
    return x


def prints_then_adds(x):
    print("step")
    return x + 1


def counters(**nonzero: int) -> dict[str, int]:
    out = dict.fromkeys(pdyn.stats(), 0)
    out.update(nonzero)
    return out


def calls_without_warnings(fn, *calls, at=__file__):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [fn(*args) for args in calls]
    pdyn_warnings = [w for w in caught if "pdyn" in str(w.message)]
    assert at is None or all(w.filename == at for w in pdyn_warnings)   # it points at the user's call
    return results, [str(w.message) for w in pdyn_warnings]


def test_frames_that_break_before_their_first_op_run_no_graph_and_say_so(capsys):
    opt = pdyn.optimize(prints_then_returns)
    x = torch.ones(2)
    (first, *_), messages = calls_without_warnings(opt, (x,), (x,), (x,), (x,))
    assert first is x and capsys.readouterr().out == "step\n" * 4
    # the function's entry (break at print) and its resume function's (`return x`): four calls each
    assert pdyn.stats() == counters(frames=8, compiles=2, cache_hits=6, graph_breaks=1, frames_without_graph=8)
    assert pdyn.stats(opt) == counters(frames=4, compiles=1, cache_hits=3, graph_breaks=1, frames_without_graph=4)
    (message,) = messages   # the third call warns, the fourth does not again
    assert message.startswith(f"pdyn: prints_then_returns() at {__file__}:{prints_then_returns.__code__.co_firstlineno}"
                              " has run 3 times and no graph was compiled for it")
    assert "the first break: cannot trace a call to print()" in message
    assert f"{__file__}:{prints_then_returns.__code__.co_firstlineno + 1}" in message


def test_a_graph_after_the_break_counts_and_nothing_warns(capsys):
    opt = pdyn.optimize(prints_then_adds)
    _, messages = calls_without_warnings(opt, *[(torch.ones(2),)] * 4)
    assert messages == []
    assert pdyn.stats() == counters(frames=8, compiles=2, cache_hits=6, graph_breaks=1, graphs=1, ops_captured=1,
                                    frames_without_graph=4)


class BreakingLayer(torch.nn.Module):
    def forward(self, x):
        print("layer")
        return x


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([BreakingLayer(), BreakingLayer()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def test_a_module_whose_every_layer_breaks_shows_zero_graphs_and_warns(capsys):
    model = pdyn.optimize(Stack())
    x = torch.ones(3)
    results, messages = calls_without_warnings(model, (x,), (x,), (x,), at=None)   # the call is in nn.Module
    assert all(r is x for r in results) and capsys.readouterr().out == "layer\n" * 6
    stats = pdyn.stats()
    assert (stats["graphs"], stats["ops_captured"]) == (0, 0)
    # per call: forward (its break inside the loop with nothing before it: it runs without a graph,
    # its calls through pdyn), each layer's forward and its resume
    assert stats["frames_without_graph"] == stats["frames"] == 15
    # the layers share their forward's entry (a layer is guarded by its class and what the trace
    # read); the stack's forward compiles nothing and counts its break
    assert (stats["compiles"], stats["graph_breaks"], stats["eager_fallbacks"]) == (2, 2, 0)
    (message,) = messages
    assert message.startswith("pdyn: forward() at ") and "cannot trace a call to print()" in message


def test_the_recompile_limit_counts_a_fallback_once_and_each_eager_frame():
    def add(x):
        return x + 1

    with pdyn.config.patch(recompile_limit=1):
        opt = pdyn.optimize(add)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for dtype in (torch.float32, torch.float64, torch.float64, torch.float32):
                x = torch.ones(2, dtype=dtype)
                assert_same(opt(x), add(x))
    assert pdyn.stats(opt) == counters(frames=4, compiles=1, cache_hits=1, eager_fallbacks=1, graphs=1,
                                       ops_captured=1, frames_without_graph=2)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "recompile" in messages[0]   # a graph exists: no no-graph warning


def test_an_untraceable_frame_counts_a_fallback_and_each_eager_call():
    class OwnInit(Exception):
        def __init__(self, code):
            super().__init__(code)

    def break_in_handler(x):
        try:
            raise OwnInit(1)
        except OwnInit:   # an exception of a class with its own __init__ cannot be rebuilt for a resume function
            return pdyn.graph_break() or x + 1   # so a break in its handler runs the frame eagerly

    opt = pdyn.optimize(break_in_handler)
    _, messages = calls_without_warnings(opt, *[(torch.ones(2),)] * 3)
    assert pdyn.stats(opt) == counters(frames=3, compiles=1, cache_hits=2, eager_fallbacks=1, frames_without_graph=3)
    (message,) = messages
    assert "graph_break" in message


def test_the_warning_is_silenced_by_config(capsys):
    opt = pdyn.optimize(prints_then_returns)
    with pdyn.config.patch(warn_no_graph=False):
        _, messages = calls_without_warnings(opt, *[(torch.ones(2),)] * 4)
    assert messages == [] and pdyn.stats(opt)["frames_without_graph"] == 4


def test_the_warning_setting_reads_its_environment_variable(monkeypatch):
    monkeypatch.delenv("PDYN_WARN_NO_GRAPH", raising=False)
    assert Config().warn_no_graph is True
    monkeypatch.setenv("PDYN_WARN_NO_GRAPH", "0")
    assert Config().warn_no_graph is False
    monkeypatch.setenv("PDYN_WARN_NO_GRAPH", "1")
    assert Config().warn_no_graph is True


def test_a_function_without_ops_counts_frames_without_graph():
    opt = pdyn.optimize(lambda x: x)
    _, messages = calls_without_warnings(opt, *[(torch.ones(2),)] * 3)
    assert pdyn.stats(opt) == counters(frames=3, compiles=1, cache_hits=2, frames_without_graph=3)
    (message,) = messages
    assert "no graph was compiled" in message and "it has no torch ops to capture" in message
