"""pdyn.explain(fn)(*args): graphs, breaks with reasons and user lines, guards, compiles
(pdyn/explain.py)."""

from __future__ import annotations

import torch

import pdyn
from pdyn.explain import BreakReason, ExplainOutput


def two_ops(x, y):
    return torch.relu(x @ y) + 1


class OwnInit(Exception):
    """An exception whose class has its own __init__: pdyn cannot rebuild it for a resume function."""

    def __init__(self, what):
        super().__init__(what)


def with_try(x):
    y = x * 2
    try:
        raise OwnInit("traced")
    except OwnInit:
        pdyn.graph_break()  # a break handling OwnInit: no resume function, the frame runs eagerly
        return y + 1


def test_one_graph_no_breaks():
    out = pdyn.explain(two_ops)(torch.randn(2, 3), torch.randn(3, 4))
    assert isinstance(out, ExplainOutput)
    assert (out.graph_count, out.graph_break_count, out.compiles) == (1, 0, 1)
    assert out.break_reasons == []
    targets = [n.target for n in out.graphs[0].graph.nodes if n.op == "call_function"]
    assert [getattr(t, "__name__", str(t)) for t in targets] == ["matmul", "relu", "add"]


def test_unsupported_construct_is_a_break_reason_with_file_and_line():
    out = pdyn.explain(with_try)(torch.ones(2))
    assert out.graph_count == 0 and out.graph_break_count == 1 and out.compiles == 1
    (reason,) = out.break_reasons
    assert isinstance(reason, BreakReason)
    assert reason.key == "graph_break"
    assert "graph_break" in reason.reason
    assert reason.filename == __file__
    assert reason.lineno == with_try.__code__.co_firstlineno + 5
    assert str(reason) == f"{__file__}:{reason.lineno}: {reason.reason} [graph_break]"


def test_guards_text_is_the_generated_check_source():
    out = pdyn.explain(two_ops)(torch.randn(2, 3), torch.randn(3, 4))
    (text,) = out.guards
    assert text.startswith("# pdyn guards for two_ops() at ")
    assert "def check(L, G):" in text and "x = L['x']" in text and "y = L['y']" in text


def test_explain_does_not_touch_the_optimized_functions_cache():
    w = pdyn.optimize(two_ops)
    w(torch.randn(2, 3), torch.randn(3, 4))
    out = pdyn.explain(w)(torch.randn(2, 3), torch.randn(3, 4))
    assert out.compiles == 1
    assert pdyn.stats(w)["compiles"] == 1 and pdyn.stats(w)["frames"] == 1


def test_explain_of_a_module_leaves_the_module_as_it_was():
    m = torch.nn.Linear(3, 2)
    out = pdyn.explain(m)(torch.randn(4, 3))
    assert out.graph_count == 1
    assert "forward" not in vars(m)


def test_str_summarizes_counts_breaks_graphs_and_guards():
    out = pdyn.explain(with_try)(torch.ones(2))
    text = str(out)
    lines = text.splitlines()
    assert lines[:3] == ["compiles: 1", "graphs: 0", "graph breaks: 1"]
    assert lines[3] == f"  break at {out.break_reasons[0]}"
    assert "# pdyn guards for with_try()" in text
    out = pdyn.explain(two_ops)(torch.randn(2, 3), torch.randn(3, 4))
    assert "graph 1:" in str(out) and "torch.relu" in str(out)


def prints_between(x):
    y = torch.relu(x) * 2
    print("between")
    return y.sum() + 1


def test_frames_report_ops_captured_and_where_each_break_happened(capsys):
    out = pdyn.explain(prints_between)(torch.randn(3))
    first = prints_between.__code__.co_firstlineno
    before, after = out.frames
    assert before.function == f"prints_between() at {__file__}:{first}"
    assert before.ops == ("relu", "mul") and not before.eager
    assert (before.break_reason.filename, before.break_reason.lineno) == (__file__, first + 2)
    assert "print()" in before.break_reason.reason
    assert after.function.startswith("pdyn_resume_in_prints_between") and after.ops == ("sum", "add")
    assert after.break_reason is None
    assert out.ops_captured == 4
    lines = str(out).splitlines()
    at = lines.index("ops captured: 4")
    assert lines[at + 1] == f"  {before.function}: 2 ops captured (relu, mul); graph break at {before.break_reason}"
    assert lines[at + 2] == f"  {after.function}: 2 ops captured (sum, add)"


def test_a_frame_that_runs_eagerly_is_reported_with_its_reason():
    out = pdyn.explain(with_try)(torch.ones(2))
    (frame,) = out.frames
    assert frame.eager and frame.ops == () and frame.break_reason == out.break_reasons[0]
    assert str(frame) == f"{frame.function}: 0 ops captured; runs eagerly: {frame.break_reason}"
