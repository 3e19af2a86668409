"""The fuzzer's own parts: deterministic generation, strict comparison, classification, and a
reducer that keeps a failure (made on purpose by a backend that adds 1 to float results)."""

from __future__ import annotations

import math
import textwrap

import torch

from tests.fuzz.compare import difference
from tests.fuzz.generator import generate
from tests.fuzz.program import T, literal
from tests.fuzz.reduce import as_pytest, expression_variants, reduce_program
from tests.fuzz.runner import run_function


def off_by_one_backend(gm, example_inputs):
    def run(*args):
        out = gm(*args)
        return type(out)(o + 1 if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in out)

    return run


def test_same_seed_makes_the_same_program_and_calls():
    assert generate(7).source() == generate(7).source()
    assert generate(7).calls == generate(7).calls
    assert generate(7).source() != generate(8).source()


def test_difference_tells_int_from_float_bool_from_int_and_signs_of_zero():
    assert difference(1, 1.0).startswith("result: type int != float")
    assert difference(True, 1).startswith("result: type bool != int")
    assert difference(-0.0, 0.0) == "result: sign -0.0 != 0.0"
    assert difference(math.nan, math.nan) is None
    assert difference(torch.Size([2]), (2,)).startswith("result: type Size != tuple")
    assert "strides" in difference(torch.zeros(2, 3), torch.zeros(3, 2).t())


def test_literal_keeps_special_floats_readable():
    assert literal((T((2, 3), seed=4), -0.0, math.nan, [1, True])) == "(T((2, 3), seed=4), -0.0, math.nan, [1, True])"


def test_exception_types_are_compared():
    outcome = run_function("def f(x, n):\n    return x.shape[0] // n\n", [(T((3,)), 1), (T((3,)), 0)])
    assert outcome.status == "ok" and outcome.eager_raised == 1


def test_expression_variants_replace_a_node_by_an_operand():
    assert "n = a" in expression_variants("n = a + b * 2")
    assert "if a:" in expression_variants("if a > 3:")


def test_reducer_keeps_the_failure_and_prints_a_test():
    source = textwrap.dedent("""
        def f(x, k):
            global COUNTER
            a = x.shape[0] + k
            COUNTER += a
            y = torch.relu(x) * 2
            return y, a
    """)
    calls = [(T((3, 2)), 1), (T((4, 2)), 2)]
    outcome = run_function(source, calls, backend=off_by_one_backend)
    assert outcome.status == "wrong" and "values differ" in outcome.detail
    program = generate(0).with_changes(params=["x", "k"], calls=calls, returns=["y", "a"], return_style="tuple")
    program.body = [type(program.body[0])(line.strip()) for line in source.splitlines()[3:6]]
    reduced, reduced_outcome = reduce_program(program, run_function(program.function_source(), calls,
                                                                    off_by_one_backend), off_by_one_backend, 30)
    assert reduced_outcome.status == "wrong"
    assert len(reduced.body) <= 1 and len(reduced.calls) == 1
    text = as_pytest(reduced, reduced_outcome, "eager", "test_example")
    assert "def test_example():" in text and "assert_matches_eager(source, calls" in text
