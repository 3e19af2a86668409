"""The step loop: executed opcodes, the handler registry, unknown opcodes, try blocks, limits
(pdyn/trace/translator.py)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from pdyn.trace.translator import HANDLERS, InstructionTranslator, handler
from pdyn.base.config import Config
from pdyn.base.errors import Unsupported
from pdyn.trace.output_graph import OutputGraph
from pdyn.trace.context import TraceContext
from pdyn.sources import LocalSource
from pdyn.trace.variables.builder import wrap


def trace(fn: Any, *args: Any, config: Config | None = None) -> InstructionTranslator:
    """Run `fn`'s bytecode symbolically on `args`, as compile_frame does; returns the translator."""
    code = fn.__code__
    tx = InstructionTranslator(code, {}, fn.__globals__, OutputGraph(code.co_name, TraceContext()), config or Config())
    names = code.co_varnames[:code.co_argcount]
    tx.locals = {name: wrap(tx, value, LocalSource(name)) for name, value in zip(names, args)}
    tx.result = tx.run()  # type: ignore[attr-defined]
    return tx


def test_executed_opnames_lists_what_really_ran():
    def f(x, flag):
        if flag:
            return x * 2
        return x - 1

    tx = trace(f, torch.ones(2), True)
    assert {"LOAD_FAST", "POP_JUMP_IF_FALSE", "BINARY_OP", "RETURN_VALUE"} <= tx.executed_opnames
    assert "LOAD_CONST" in tx.executed_opnames
    ops = [n.target.__name__ for n in tx.output.graph.nodes if n.op == "call_function"]
    assert ops == ["mul"]


def helper(y):
    return torch.relu(y)


def down(n):
    return down(n - 1) if n else 0


def test_inlined_calls_share_executed_opnames_and_the_graph():
    def f(x):
        return helper(x) + 1

    tx = trace(f, torch.ones(2))
    assert "CALL" in tx.executed_opnames and "LOAD_GLOBAL" in tx.executed_opnames
    ops = [getattr(n.target, "__name__", n.target) for n in tx.output.graph.nodes if n.op == "call_function"]
    assert ops == ["relu", "add"]


def test_opcode_without_handler_is_unsupported_with_its_name_and_line():
    def f(x):
        class K:  # LOAD_BUILD_CLASS has no handler
            pass
        return x * 2

    assert "LOAD_BUILD_CLASS" not in HANDLERS
    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(2))
    assert error.value.key == "opcode"
    assert "LOAD_BUILD_CLASS" in error.value.message
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1
    assert error.value.loc.filename == __file__


def test_code_in_a_try_block_is_traced():
    def f(x):
        try:
            return x + 1
        finally:
            pass

    tx = trace(f, torch.ones(2))
    assert [n.target.__name__ for n in tx.output.graph.nodes if n.op == "call_function"] == ["add"]


def test_max_trace_steps_stops_a_runaway_loop():
    def f(x):
        for _ in range(1000):
            x = x + 0
        return x

    with pytest.raises(Unsupported) as error:
        trace(f, 1, config=Config(max_trace_steps=50))
    assert error.value.key == "trace_too_long"


def test_inline_depth_limit_stops_recursion():
    with pytest.raises(Unsupported) as error:
        trace(down, 10, config=Config(inline_depth_limit=3))
    assert error.value.key == "inline_depth"


def test_registering_a_second_handler_or_an_unknown_opcode_fails():
    with pytest.raises(AssertionError, match="second handler for LOAD_FAST"):
        handler("LOAD_FAST")(lambda tx, inst: None)
    with pytest.raises(AssertionError, match="not an instruction"):
        handler("NOT_AN_OPCODE")(lambda tx, inst: None)
    assert "NOT_AN_OPCODE" not in HANDLERS


def test_stack_helpers_check_their_invariants():
    def f(x):
        return x

    tx = trace(f, 1)
    with pytest.raises(AssertionError, match="empty stack"):
        tx.pop()
    with pytest.raises(AssertionError, match="pushed"):
        tx.push(3)  # type: ignore[arg-type]
    assert tx.popn(0) == []
