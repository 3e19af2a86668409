"""pdyn.debug.bisect: a call whose optimized result differs from eager is traced back to the first
wrong node (a backend that miscompiles one), the missing guard, or the invalid symbolic step."""

import pytest
import torch

import pdyn
import pdyn.debug
from pdyn.ops import shape_rules_nn
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


def test_a_wrong_shape_rule_is_named_as_the_frontend_step(monkeypatch):
    """A window size rounded up: right at the sizes traced, wrong at the call bisected; the eager
    backend is wrong too, and the replay under translation validation names the rule and the line."""
    pytest.importorskip("z3")
    right = shape_rules_nn.window_size
    monkeypatch.setattr(shape_rules_nn, "window_size",
                        lambda c, size, k, s, p, d, ceil_mode=False: right(c, size, k, s, p, d, True))

    def g(x, w):
        y = torch.nn.functional.conv1d(x, w, stride=2)
        if y.shape[2] > 4:   # guarded with the rule's size: a call with 4 passes the guard
            return y * 2
        return y * 3

    f = pdyn.optimize(g, backend="eager")
    w = torch.randn(3, 2, 3)
    f(torch.randn(1, 2, 9), w)
    f(torch.randn(1, 2, 11), w)   # symbolic from here; (11 - 3) / 2 is exact, so the fake run agrees
    report = pdyn.debug.bisect(f, torch.randn(1, 2, 10), w)
    assert report.fault == "frontend"
    assert "conv1d output size" in report.culprit
    assert report.loc.lineno == g.__code__.co_firstlineno + 1
