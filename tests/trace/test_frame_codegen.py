"""The Python function an entry runs on a hit: graph call, rebuilt result, side effects
(pdyn/trace/frame_codegen.py)."""

from __future__ import annotations

import torch

import pdyn
from pdyn.sources import LocalSource, ModuleMemberSource
from pdyn.trace.frame_codegen import FrameCodegen, build_frame_function


def test_build_frame_function_calls_graph_and_returns_result():
    codegen = FrameCodegen()
    run, source = build_frame_function(codegen, "(out[0], L['n'])", [], ([], ["L['x']"]), lambda x: (x * 2,), "f()")
    assert source == ("# pdyn frame code for f()\n"
                      "def run(L, G):\n"
                      "    out = compiled_graph(L['x'])\n"
                      "    result = (out[0], L['n'])\n"
                      "    return result\n")
    result = run({"x": torch.ones(2), "n": 3}, {})
    torch.testing.assert_close(result[0], torch.full((2,), 2.0))
    assert result[1] == 3


def test_without_a_graph_there_is_no_graph_call():
    run, source = build_frame_function(FrameCodegen(), "L['n'] + 1", [], ([], []), None, "g()")
    assert "compiled_graph" not in source
    assert run({"n": 1}, {}) == 2


def test_side_effects_run_after_the_result_is_computed():
    codegen = FrameCodegen()
    codegen.lines.append("e0 = [1, 2]")
    run, source = build_frame_function(codegen, "len(L['xs'])", ["L['xs'][:] = e0"], ([], []), None, "h()")
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


def test_graph_inputs_read_a_shared_module_once_and_its_members_through_its_dict():
    block = ModuleMemberSource(LocalSource("self"), "block", "_modules")
    weight, bias = (ModuleMemberSource(block, name, "_parameters") for name in ("weight", "bias"))
    lone = ModuleMemberSource(ModuleMemberSource(LocalSource("self"), "head", "_modules"), "weight", "_parameters")
    reads, exprs = FrameCodegen().input_reads([weight, bias, lone, LocalSource("x")])
    assert reads == ["_in0 = L['self']", "_in1 = _in0.__dict__", "_in2 = _in1['_modules']['block']",
                     "_in3 = _in2.__dict__"]
    assert exprs == ["_in3['_parameters']['weight']", "_in3['_parameters']['bias']",
                     "_in1['_modules']['head']._parameters['weight']", "L['x']"]


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.b(self.a(x).relu())


def test_a_parameter_replaced_after_compiling_is_read_by_the_next_call():
    torch.manual_seed(0)
    model = torch.nn.Sequential(_Block(), _Block())
    f = pdyn.optimize(model.forward, backend="eager")
    x = torch.randn(3, 4)
    with torch.no_grad():
        torch.testing.assert_close(f(x), model(x))
        model[1].b.weight = torch.nn.Parameter(torch.randn(4, 4))   # a new object, same type and shape
        model[0].a.bias.data = torch.randn(4)                        # new data under the same object
        torch.testing.assert_close(f(x), model(x))
    assert f._pdyn_frame.cache.counters["compiles"] == 1
    entry = f._pdyn_frame.cache.entries[0]
    assert ".__dict__" in entry.frame_source and "_modules" in entry.frame_source


def test_a_hook_added_after_compiling_recompiles_and_runs():
    model = torch.nn.Sequential(_Block(), _Block())
    f = pdyn.optimize(model.forward, backend="eager")
    x = torch.randn(3, 4)
    with torch.no_grad():
        f(x)
        model[1].a.register_forward_hook(lambda mod, args, out: out * 0)
        torch.testing.assert_close(f(x), model(x))
    assert f._pdyn_frame.cache.counters["compiles"] == 2
    assert "_forward_hooks" in f._pdyn_frame.cache.entries[0].guard.source
