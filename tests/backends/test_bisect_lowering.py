"""A planted wrong Triton lowering is named by pdyn.debug.bisect: the node, its user line, and that
the eager backend is right (a backend fault)."""

import torch

import pdyn
import pdyn.debug
from pdyn.backends.triton import triton_ops
from tests.backends.util import DEVICE


def program(x, y):
    a = x * 2
    b = torch.sigmoid(a) + y       # the lowering planted wrong
    return b.sum(0) * 3


def test_a_wrong_triton_lowering_is_named_by_bisect(monkeypatch):
    monkeypatch.setitem(triton_ops.COMMON, "sigmoid", "(1.0 - tl.sigmoid({0}))")
    f = pdyn.optimize(program, backend="triton")
    x, y = torch.randn(4, 3, device=DEVICE), torch.randn(4, 3, device=DEVICE)
    report = pdyn.debug.bisect(f, x, y)
    assert report.fault == "backend", str(report)
    assert report.node is not None and report.node.name.startswith("sigmoid"), str(report)
    assert report.loc.lineno == program.__code__.co_firstlineno + 2
