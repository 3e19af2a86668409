"""The fx graph under construction: placeholders with sources, nodes with the user's file:line,
aliasing of inputs, op errors (pdyn/trace/output_graph.py)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from pdyn.base.errors import SourceLoc, Unsupported, UserException
from pdyn.guards.guards import AliasGuard, GradModeGuard
from pdyn.trace.output_graph import OutputGraph
from pdyn.trace.context import TraceContext
from pdyn.sources import LocalSource
from tests.helpers import CountingBackend

import pdyn


def graph_of(fn: Any, *args: Any) -> torch.fx.GraphModule:
    backend = CountingBackend()
    pdyn.optimize(fn, backend=backend)(*args)
    (gm,) = backend.graphs
    return gm


def two_lines(x, y):
    a = x @ y
    return torch.relu(a) + 1


def test_every_op_node_carries_the_users_file_and_line():
    gm = graph_of(two_lines, torch.randn(2, 3), torch.randn(3, 4))
    first = two_lines.__code__.co_firstlineno
    ops = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert [(n.meta["loc"].filename, n.meta["loc"].lineno) for n in ops] == [
        (__file__, first + 1), (__file__, first + 2), (__file__, first + 2)]
    assert all(isinstance(n.meta["loc"], SourceLoc) and n.meta["loc"].function == "two_lines" for n in ops)
    assert "torch.relu(a) + 1" in ops[1].meta["stack_trace"]


def test_placeholders_are_the_tensor_inputs_with_their_sources():
    gm = graph_of(two_lines, torch.randn(2, 3), torch.randn(3, 4))
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert [n.name for n in placeholders] == ["x", "y"]
    assert [n.meta["source"] for n in placeholders] == [LocalSource("x"), LocalSource("y")]
    assert [tuple(n.meta["example_value"].shape) for n in placeholders] == [(2, 3), (3, 4)]


def test_same_tensor_twice_is_one_input_and_an_alias_guard():
    output = OutputGraph("f", TraceContext())
    t = torch.ones(2)
    a = output.add_input(t, LocalSource("a"), None)
    b = output.add_input(t, LocalSource("b"), None)
    assert a is b and len(output.inputs) == 1
    aliases = [g for g in output.ctx.guards if isinstance(g, AliasGuard)]
    assert [(g.source, g.other, g.same) for g in aliases] == [(LocalSource("b"), LocalSource("a"), True)]


def test_grad_mode_is_always_guarded():
    assert any(isinstance(g, GradModeGuard) for g in OutputGraph("f", TraceContext()).ctx.guards)


def test_op_that_raises_is_a_user_exception_at_the_current_line():
    output = OutputGraph("f", TraceContext())
    loc = SourceLoc(__file__, 7, "f")
    x = output.add_input(torch.ones(2, 3), LocalSource("x"), loc)
    with pytest.raises(UserException) as error:
        output.call("call_function", torch.matmul, [x, x], {}, loc=loc)
    assert isinstance(error.value.exc, RuntimeError) and error.value.loc.lineno == 7


def test_data_dependent_op_gets_an_unbacked_symbol():
    output = OutputGraph("f", TraceContext())
    x = output.add_input(torch.ones(3), LocalSource("x"), None)
    y = output.call("call_function", torch.nonzero, [x], {}, loc=None)
    u = y.sizes[0]
    assert u in output.ctx.shape_env.unbacked and output.ctx.shape_env.ranges[u][0] == 0 and y.sizes[1] == 1
    with pytest.raises(Unsupported) as error:
        output.ctx.shape_env.hint(u)
    assert error.value.key == "data_dependent"


def test_op_records_a_node_with_fake_example_value():
    output = OutputGraph("f", TraceContext())
    loc = SourceLoc(__file__, 9, "f")
    x = output.add_input(torch.ones(2, 3), LocalSource("x"), loc)
    y = output.call("call_function", torch.sum, [x], {}, loc=loc)
    node = y.node  # type: ignore[attr-defined]
    assert node.target is torch.sum and node.meta["loc"].lineno == 9
    assert tuple(node.meta["example_value"].shape) == ()
