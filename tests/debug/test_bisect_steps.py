"""pdyn.debug.bisect names a frontend fault by replaying the served entry's trace with ShapeEnv steps
undone: each planted fault (a wrong rewrite rule, a dropped guard, an off-by-one shape rule) is
named with z3 hidden, and with z3 the translation validation route names the same line."""

import sys

import pytest
import torch

import pdyn
import pdyn.debug
from pdyn.ops import shape_rules_nn
from tests.planted_faults import branches_on_length, drop_expr_guards, split_floor_division, strided_branch


@pytest.fixture(params=["without z3", "with z3"])
def z3_route(request, monkeypatch):
    if request.param == "without z3":
        monkeypatch.setitem(sys.modules, "z3", None)   # `import z3` raises ImportError
        return False
    pytest.importorskip("z3")
    return True


def lineno(fn, offset):
    return fn.__code__.co_firstlineno + offset


def check_z3_agrees(report, z3_route):
    if z3_route:
        assert report.z3 is not None and report.z3.loc.lineno == report.loc.lineno, str(report)
        assert "translation validation (z3) names" in str(report)
    else:
        assert report.z3 is None


def test_a_wrong_rewrite_rule_is_named_as_the_step(monkeypatch, request, z3_route):
    split_floor_division(monkeypatch, request)
    f = pdyn.optimize(strided_branch, backend="eager")
    for n, k in ((12, 4), (14, 6)):   # the split agrees at even sizes: one symbolic entry
        f(torch.randn(1, 2, n), torch.randn(3, 2, k))
    assert pdyn.stats(f)["compiles"] == 1
    x, w = torch.randn(1, 2, 17), torch.randn(3, 2, 5)
    assert not torch.equal(f(x, w), strided_branch(x, w))   # the planted fault shows
    report = pdyn.debug.bisect(f, x, w)
    assert report.fault == "frontend", str(report)
    step = report.step
    assert step.kind == "rewrite" and report.step_alone
    assert step.before == "FloorDiv(s2 - s5 + 2, 2)" and step.after == "FloorDiv(s2, 2) + FloorDiv(-s5, 2) + 1"
    assert step.loc.lineno == report.loc.lineno == lineno(strided_branch, 1)
    assert step.id == f"rewrite#1@planted_faults.py:{lineno(strided_branch, 1)}"
    text = str(report)
    assert "first wrong: the rewrite FloorDiv(s2 - s5 + 2, 2)" in text and "kept as written" in text
    assert "conv1d(x, w, stride=2, padding=1)" in text
    check_z3_agrees(report, z3_route)


def test_a_dropped_guard_is_named_as_the_guard_step(monkeypatch, z3_route):
    drop_expr_guards(monkeypatch)
    f = pdyn.optimize(branches_on_length, backend="eager")
    f(torch.randn(8))
    f(torch.randn(9))
    report = pdyn.debug.bisect(f, torch.randn(3))
    assert report.fault == "guards", str(report)
    assert report.step.kind == "guard" and report.step.before == "s0 > 5" and report.step_alone
    assert report.step.loc.lineno == report.loc.lineno == lineno(branches_on_length, 1)
    assert "pinned to this trace's values" in str(report)
    check_z3_agrees(report, z3_route)


def test_an_off_by_one_shape_rule_is_named_by_the_hint_check(monkeypatch, z3_route):
    """No ShapeEnv step is wrong: the first guard over the wrong size is the step whose undoing
    (pinning) makes the call right, and the hint check at the call's sizes names the shape rule."""
    right = shape_rules_nn.window_size
    monkeypatch.setattr(shape_rules_nn, "window_size",
                        lambda c, size, k, s, p, d, ceil_mode=False: right(c, size, k, s, p, d, True))

    def g(x, w):
        y = torch.nn.functional.conv1d(x, w, stride=2)
        if y.shape[2] > 4:
            return y * 2
        return y * 3

    f = pdyn.optimize(g, backend="eager")
    w = torch.randn(3, 2, 3)
    f(torch.randn(1, 2, 9), w)
    f(torch.randn(1, 2, 11), w)
    report = pdyn.debug.bisect(f, torch.randn(1, 2, 10), w)
    assert report.fault == "frontend", str(report)
    assert report.culprit.startswith("conv1d: the shape rule gives sizes") and "the op produced [(1, 3, 4)]" in report.culprit
    assert report.loc.lineno == lineno(g, 1)
    assert report.step is not None and report.step.kind == "guard"
    assert "a shape rule is not a ShapeEnv step" in str(report)
    check_z3_agrees(report, z3_route)
    if z3_route:
        assert "conv1d output size" in report.z3.culprit
