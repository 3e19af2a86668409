"""The Triton backend's counters and explain: kernels, nodes run as torch calls (and which are
library kernels by design), graphs run wholly with torch (warned once, with the reason); a node
whose compile fails runs with torch and the rest of its graph stays lowered."""

from __future__ import annotations

import warnings

import pytest
import torch

import pdyn
from pdyn.backends.triton import scheduler
from tests.backends.util import Recorder, check, randn


def f(x, w):
    return torch.flip(torch.relu(x @ w) + 1, [0]).sum(-1)


def test_stats_count_kernels_and_torch_calls():
    rec = check(f, (randn(4, 3), randn(3, 5)))
    stats = pdyn.stats()
    assert (stats["graphs_on_torch"], stats["nodes_on_torch"], stats["library_calls"]) == (0, 2, 1), stats
    assert stats["kernels"] == len(set(rec.last.kernel_sources)) >= 1
    assert [(e.op, e.kind) for e in rec.last.externs] == [("matmul", "library"), ("flip", "fallback")]


def test_explain_lists_each_torch_call_and_why():
    report = pdyn.explain(f, backend="triton")(randn(4, 3), randn(3, 5))
    text = str(report)
    assert report.backends[0].nodes_on_torch == 2
    assert "matmul (matmul): library, a library kernel (torch's)" in text, text
    assert "flip (flip): fallback, a copy along reversed dims without a lowering yet" in text, text


def test_a_graph_run_wholly_with_torch_is_counted_and_warns_once():
    def g(x):  # a training graph that writes a tensor exp saved: the backward is not built, torch runs it
        y = x.exp()
        y.add_(1)
        return y
    opt = pdyn.optimize(g, backend="triton")
    with pytest.warns(UserWarning, match="runs wholly with torch on the triton backend: training: in-place op"):
        opt(randn(3, 4).requires_grad_())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt(randn(5, 4, 2).requires_grad_())  # another graph: counted, not warned again
    assert pdyn.stats()["graphs_on_torch"] == 2


def test_a_node_whose_kernel_fails_to_compile_runs_with_torch(monkeypatch):
    generate = scheduler.generate_kernel

    def failing(nodes, *args, **kwargs):
        if any(n.origin is not None and n.origin.name == "add" for n in nodes):
            raise RuntimeError("planted codegen failure")
        return generate(nodes, *args, **kwargs)

    monkeypatch.setattr(scheduler, "generate_kernel", failing)
    rec = check(f, (randn(4, 3), randn(3, 5)))
    externs = {e.op: e for e in rec.last.externs}
    assert "planted codegen failure" in externs["add"].reason and externs["add"].kind == "fallback"
    assert pdyn.stats()["graphs_on_torch"] == 0 and rec.last.kernel_count >= 1


def test_an_autocast_block_runs_its_nodes_with_torch_and_the_rest_in_kernels():
    def h(x, w):
        y = x * 2
        with torch.autocast("cpu", dtype=torch.bfloat16):
            z = y @ w
        return z.float().sum(-1) + 1
    rec = check(h, (randn(4, 3), randn(3, 5)))
    assert [(e.op, e.kind) for e in rec.last.externs] == [
        ("_enter_autocast", "fallback"), ("matmul", "fallback"), ("_exit_autocast", "fallback")]
    assert pdyn.stats()["graphs_on_torch"] == 0 and rec.last.kernel_count >= 2
