"""The Python function an entry runs on a hit: graph call, rebuilt result, side effects
(pdyn/trace/frame_codegen.py)."""

from __future__ import annotations

import torch

import pdyn
from pdyn.trace.frame_codegen import FrameCodegen, build_frame_function


def test_build_frame_function_calls_graph_and_returns_result():
    codegen = FrameCodegen()
    run, source = build_frame_function(codegen, "(out[0], L['n'])", [], ["L['x']"], lambda x: (x * 2,), "f()")
    assert source == ("# pdyn frame code for f()\n"
                      "def run(L, G):\n"
                      "    out = compiled_graph(L['x'])\n"
                      "    result = (out[0], L['n'])\n"
                      "    return result\n")
    result = run({"x": torch.ones(2), "n": 3}, {})
    torch.testing.assert_close(result[0], torch.full((2,), 2.0))
    assert result[1] == 3


def test_without_a_graph_there_is_no_graph_call():
    run, source = build_frame_function(FrameCodegen(), "L['n'] + 1", [], [], None, "g()")
    assert "compiled_graph" not in source
    assert run({"n": 1}, {}) == 2


def test_side_effects_run_after_the_result_is_computed():
    codegen = FrameCodegen()
    codegen.lines.append("e0 = [1, 2]")
    run, source = build_frame_function(codegen, "len(L['xs'])", ["L['xs'][:] = e0"], [], None, "h()")
    xs = [9]
    assert run({"xs": xs}, {}) == 1
    assert xs == [1, 2]


def test_constants_are_literals_or_named_objects():
    codegen = FrameCodegen()
    assert codegen.constant(3) == "3" and codegen.constant("a'b") == repr("a'b") and codegen.constant(None) == "None"
    assert codegen.constant(1.5) == "1.5"
    nan = float("nan")
    name = codegen.constant(nan)
    assert name.startswith("_c") and codegen.scope[name] is nan
    dtype_name = codegen.constant(torch.float16, "dtype")
    assert codegen.scope[dtype_name] is torch.float16
    assert codegen.constant(torch.float16, "dtype") == dtype_name


def test_optimized_function_returns_python_values_and_mutates_inputs_like_eager():
    def f(x, acc):
        acc.append(3)
        return x + 1, len(acc), "done"

    acc_eager, acc_pdyn = [1], [1]
    expected = f(torch.ones(2), acc_eager)
    actual = pdyn.optimize(f)(torch.ones(2), acc_pdyn)
    torch.testing.assert_close(actual[0], expected[0])
    assert actual[1:] == expected[1:] and acc_pdyn == acc_eager
