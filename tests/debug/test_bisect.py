"""pdyn.debug.bisect: a call whose optimized result differs from eager is traced back to the first
wrong node (a backend that miscompiles one), the missing guard, or the invalid symbolic step."""

import torch

import pdyn
import pdyn.debug
from tests.planted_faults import branches_on_length, drop_expr_guards


def program(x, y):
    a = x * 2
    b = torch.sigmoid(a) + y       # the node a planted backend gets wrong
    c = b.sum(0)
    return c * 3


def sigmoid_is_tanh(gm, example_inputs):
    """A custom backend with one wrong lowering: sigmoid runs as tanh."""
    for node in gm.graph.nodes:
        if node.target is torch.sigmoid:
            node.target = torch.tanh
    gm.recompile()
    return gm.forward


def test_a_backend_that_miscompiles_one_node_is_named():
    f = pdyn.optimize(program, backend=sigmoid_is_tanh)
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    report = pdyn.debug.bisect(f, x, y)
    assert report.fault == "backend"
    assert report.node is not None and report.node.name.startswith("sigmoid")
    assert report.loc.lineno == program.__code__.co_firstlineno + 2
    assert "backend fault" in str(report) and "torch.sigmoid(a) + y" in str(report)


def test_a_correct_backend_reports_no_difference():
    f = pdyn.optimize(program, backend="eager")
    report = pdyn.debug.bisect(f, torch.randn(4, 3), torch.randn(4, 3))
    assert report.fault == "none"


def test_a_dropped_guard_is_named_with_the_call_it_lets_through(monkeypatch):
    drop_expr_guards(monkeypatch)
    g = branches_on_length
    f = pdyn.optimize(g, backend="eager")
    f(torch.randn(8))
    f(torch.randn(9))   # the second compile makes the dim symbolic, with its guard dropped
    report = pdyn.debug.bisect(f, torch.randn(3))
    assert report.fault == "guards"
    assert "s0 > 5" in report.culprit and report.loc.lineno == g.__code__.co_firstlineno + 1
    assert "L['x'].size(0) = 3" in report.detail
