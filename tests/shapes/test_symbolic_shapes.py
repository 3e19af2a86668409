"""ShapeEnv: symbols, hints and ranges, bool reads that guard, value reads that specialize,
unification, simplification, and sympy -> Python (pdyn/shapes/shape_env.py)."""

import math
import operator

import pytest
import sympy
from hypothesis import given, settings, strategies as st

from pdyn.base.errors import SourceLoc, Unsupported
from pdyn.sources import LocalSource
from pdyn.sources import SizeSource
from pdyn.shapes.shape_env import FloorDiv, ReadPolicy, ShapeEnv, evaluate, substitute, to_python

LOC = SourceLoc("model.py", 3, "forward", 4, 9)
X, Y = LocalSource("x"), LocalSource("y")


def env_with(*hints):
    """A ShapeEnv with one symbol per hint: s0 = x.size(0), s1 = x.size(1), ..."""
    env = ShapeEnv()
    syms = [env.create_symbol(h, SizeSource(X, i)) for i, h in enumerate(hints)]
    return env, syms


def test_create_symbol_specializes_zero_and_keeps_one_symbolic_from_one():
    env = ShapeEnv()
    assert env.create_symbol(0, SizeSource(X, 0)) == 0 and env.hints == {}
    one = env.create_symbol(1, SizeSource(X, 1))   # a symbol in [1, inf): nothing says it is 1
    assert one.is_Symbol and env.hints == {one: 1} and env.ranges[one] == env.initial_range(one) == (1, math.inf)
    assert env.ones_first() == [one]


def test_create_symbol_records_hint_origin_and_range():
    env = ShapeEnv()
    s0 = env.create_symbol(8, SizeSource(X, 0))
    s1 = env.create_symbol(-3, SizeSource(LocalSource("n"), None))
    assert (s0.name, s1.name) == ("s0", "s1") and s0.is_integer
    assert env.hints == {s0: 8, s1: -3}
    assert env.origins[s0] == [SizeSource(X, 0)] and str(env.origins[s1][0]) == "L['n']"
    assert env.ranges == {s0: (2, math.inf), s1: (-math.inf, -1)}


def test_symbol_origin_expression():
    assert SizeSource(X, 2).expr() == "L['x'].size(2)" and SizeSource(X, None).expr() == "L['x']"


def test_evaluate_bool_records_the_fact_that_held():
    env, (s0,) = env_with(8)
    assert env.evaluate_bool(sympy.Gt(s0, 4), LOC) is True
    assert env.evaluate_bool(sympy.Lt(s0, 6, evaluate=False), LOC) is False
    assert [(str(g.expr), g.loc) for g in env.guards] == [("s0 > 4", LOC), ("s0 >= 6", LOC)]
    assert env.specialized == {}


def test_evaluate_bool_asks_each_question_once():
    env, (s0, s1) = env_with(8, 3)
    expr = sympy.Gt(s0 * s1, 10, evaluate=False)
    assert env.evaluate_bool(expr, LOC) and env.evaluate_bool(expr, LOC)
    assert len(env.guards) == 1


def test_evaluate_bool_decided_by_the_range_records_nothing():
    env, (s0,) = env_with(8)
    assert env.evaluate_bool(sympy.Ge(s0, 2), LOC) is True
    assert env.evaluate_bool(sympy.Eq(s0, 1, evaluate=False), LOC) is False
    assert env.evaluate_bool(sympy.Ne(s0, 0, evaluate=False), LOC) is True
    assert env.guards == []


def test_guard_refines_the_range_for_later_reads():
    env, (s0,) = env_with(8)
    env.evaluate_bool(sympy.Gt(s0, 4), LOC)
    assert env.ranges[s0] == (5, math.inf)
    assert env.evaluate_bool(sympy.Gt(s0, 3), LOC) is True
    assert len(env.guards) == 1


def test_comparison_with_the_constant_on_the_left_is_decided_by_the_range():
    env, (s0,) = env_with(8)
    assert env.evaluate_bool(sympy.Lt(1, s0, evaluate=False), LOC) is True
    assert env.guards == []


def test_equality_with_a_constant_pins_the_symbol_as_a_comparison():
    env, (s0,) = env_with(10)
    assert env.evaluate_bool(sympy.Eq(s0, 10, evaluate=False), LOC) is True
    spec = env.specialized[s0]
    assert (spec.value, spec.by_value_read, spec.loc) == (10, False, LOC)
    assert env.guards == [] and env.simplify(s0 + 1) == 11
    assert env.live_symbols() == []


def test_inequality_that_failed_pins_nothing():
    env, (s0,) = env_with(10)
    assert env.evaluate_bool(sympy.Eq(s0, 4, evaluate=False), LOC) is False
    assert env.specialized == {} and [str(g.expr) for g in env.guards] == ["Ne(s0, 4)"]


def test_guard_equal_unifies_two_symbols():
    env, (s0, s1) = env_with(6, 6)
    env.ranges[s1] = (3, 100)
    assert env.guard_equal(s1, s0, LOC) == s0
    assert env.replacements == {s1: s0} and env.unified == {s1}
    assert env.origins[s0] == [SizeSource(X, 0), SizeSource(X, 1)]
    assert env.ranges[s0] == (3, 100)
    assert env.simplify(s0 * s1) == s0 ** 2
    assert env.live_symbols() == [s0]
    assert [(str(o), str(e)) for o, e in env.all_origins()] == [("L['x'].size(0)", "s0"), ("L['x'].size(1)", "s0")]


def test_guard_equal_of_equal_expressions_adds_nothing():
    env, (s0,) = env_with(6)
    assert env.guard_equal(2 * s0, s0 + s0, LOC) == 2 * s0
    assert env.guards == [] and env.replacements == {}


def test_guard_equal_of_an_expression_records_a_guard():
    env, (s0, s1) = env_with(6, 3)
    env.guard_equal(s0, 2 * s1, LOC)
    assert [str(g.expr) for g in env.guards] == ["Eq(s0, 2*s1)"]


def test_guard_equal_that_is_false_is_an_internal_error():
    env, (s0, s1) = env_with(6, 4)
    with pytest.raises(AssertionError, match="is false in this call"):
        env.guard_equal(s0, s1, LOC)


def test_specialize_pins_every_symbol_and_records_the_origins():
    env, (s0, s1) = env_with(6, 4)
    assert env.specialize(s0 * s1 + 1, LOC, "range()") == 25
    assert {s: (spec.value, spec.why, spec.by_value_read) for s, spec in env.specialized.items()} == {
        s0: (6, "range()", True), s1: (4, "range()", True)}
    assert env.events == [f"L['x'].size(0) specialized to 6 by range() at {LOC}",
                          f"L['x'].size(1) specialized to 4 by range() at {LOC}"]
    assert [(str(o), e) for o, e in env.all_origins()] == [("L['x'].size(0)", 6), ("L['x'].size(1)", 4)]


def test_value_read_under_a_break_policy_is_unsupported():
    env = ShapeEnv(ReadPolicy(on_value_read=lambda origin: "break"))
    s0 = env.create_symbol(5, SizeSource(X, 0))
    with pytest.raises(Unsupported) as error:
        env.specialize(s0, LOC, "range()")
    assert error.value.key == "dynamic_size_read" and error.value.loc == LOC
    assert "L['x'].size(0)" in error.value.message and env.specialized == {}


def test_bool_read_under_a_specialize_policy_pins_instead_of_guarding():
    env = ShapeEnv(ReadPolicy(on_bool_read=lambda origin: "specialize"))
    s0 = env.create_symbol(5, SizeSource(X, 0))
    assert env.evaluate_bool(sympy.Gt(s0, 4), LOC, "if") is True
    assert env.guards == [] and env.specialized[s0].value == 5


def test_simplify_after_a_pin_decides_comparisons():
    env, (s0, s1) = env_with(5, 7)
    env.specialize(s0, LOC, "test")
    assert env.simplify(sympy.Gt(s0, 3, evaluate=False)) == sympy.true
    assert env.simplify(sympy.Lt(s0, s1, evaluate=False)) == sympy.Lt(5, s1)
    assert env.evaluate_bool(sympy.Gt(s0, 9, evaluate=False), LOC) is False and env.guards == []
    assert env.free(s0 + s1) == [s1]


def test_substitute_keeps_mod_and_relations_unevaluated_until_numbers():
    s0, s1 = sympy.symbols("s0 s1", integer=True)
    mod = sympy.Mod(s0 + s1, 4, evaluate=False)
    assert substitute(mod, {s0: sympy.Integer(5)}) == sympy.Mod(5 + s1, 4, evaluate=False)
    assert substitute(mod, {s0: sympy.Integer(5), s1: sympy.Integer(7)}) == 0
    assert substitute(sympy.Ne(s0, 3, evaluate=False), {s0: sympy.Integer(3)}) == sympy.false


def test_hint_evaluates_in_this_call():
    env, (s0, s1) = env_with(6, 4)
    assert env.hint(sympy.floor(s0 / s1)) == 1 and env.hint(s0 / s1) == 1.5
    assert env.hint(sympy.Max(s0, s1) - sympy.Min(s0, s1)) == 2 and env.hint(sympy.Gt(s0, s1)) is True


def test_evaluate_of_a_function_without_a_fast_rule_asks_sympy():
    s0 = sympy.Symbol("s0", integer=True)
    assert evaluate(sympy.factorial(s0) + 1, {s0: 4}) == 25
    assert evaluate(sympy.binomial(s0, 2) > 5, {s0: 4}) is True
    assert evaluate(sympy.sin(s0), {s0: 1}) == pytest.approx(math.sin(1))
    with pytest.raises(TypeError, match="not a real number"):
        evaluate(sympy.log(s0), {s0: -4})


@pytest.mark.parametrize("expr, code", [
    (lambda s0, s1: sympy.floor(s0 / 3), "((s0) // (3))"),
    (lambda s0, s1: sympy.ceiling(s0 / s1), "(-((-(s0)) // (s1)))"),
    (lambda s0, s1: sympy.Mod(s0, 8, evaluate=False), "((s0) % (8))"),
    (lambda s0, s1: -2 * sympy.Mod(s0, 2, evaluate=False), "-2*((s0) % (2))"),
    (lambda s0, s1: sympy.Gt(s0 * s1, 4), "(s0*s1 > 4)"),
    (lambda s0, s1: sympy.Min(s0, 4), "min(4, s0)"),
    (lambda s0, s1: sympy.sqrt(s0), "math.sqrt(s0)"),
])
def test_to_python_prints_exact_integer_arithmetic(expr, code):
    s0, s1 = sympy.symbols("s0 s1", integer=True)
    assert to_python(expr(s0, s1)) == code


# -- simplifications on random integer assignments ----------------------------------------------

S = sympy.symbols("s0 s1 s2", integer=True)


@st.composite
def expressions(draw, depth=3):
    """(sympy expression as pdyn builds it, the same computation in Python on a values tuple)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            i = draw(st.integers(0, 2))
            return S[i], lambda v, i=i: v[i]
        c = draw(st.integers(-5, 9))
        return sympy.Integer(c), lambda v, c=c: c
    op = draw(st.sampled_from(["add", "sub", "mul", "floordiv", "mod", "min", "max", "neg"]))
    a, fa = draw(expressions(depth=depth - 1))
    if op == "neg":
        return -a, lambda v: -fa(v)
    if op in ("floordiv", "mod"):
        d = draw(st.integers(1, 7))
        if op == "floordiv":
            return FloorDiv(a, d), lambda v: fa(v) // d  # as sym_binary builds it
        mod = sympy.Mod(a, d) if a.is_Number else sympy.Mod(a, d, evaluate=False)  # as sym_binary builds it
        return mod, lambda v: fa(v) % d
    b, fb = draw(expressions(depth=depth - 1))
    fn = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "min": min, "max": max}[op]
    sym = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "min": sympy.Min, "max": sympy.Max}[op]
    return sym(a, b), lambda v: fn(fa(v), fb(v))


VALUES = st.tuples(*[st.integers(2, 60)] * 3)


@settings(max_examples=150, deadline=None)
@given(expressions(), VALUES)
def test_evaluate_equals_python_arithmetic(pair, values):
    expr, python = pair
    assert evaluate(expr, dict(zip(S, values))) == python(values)


@settings(max_examples=100, deadline=None)
@given(expressions(), VALUES)
def test_to_python_source_computes_the_same_value(pair, values):
    expr, python = pair
    namespace = {"math": math, **{s.name: v for s, v in zip(S, values)}}
    assert eval(to_python(expr), namespace) == python(values)


@settings(max_examples=100, deadline=None)
@given(expressions(), VALUES)
def test_pinning_a_symbol_keeps_the_value_of_every_expression(pair, values):
    expr, python = pair
    env = ShapeEnv()
    syms = [env.create_symbol(v, SizeSource(X, i)) for i, v in enumerate(values)]
    mapping = dict(zip(S, syms))
    expr = substitute(expr, mapping)  # xreplace would let sympy fold Mod(Max(0, 2*s0), 6) to 0
    env.specialize(syms[0], LOC, "test")
    assert evaluate(sympy.sympify(env.simplify(expr)), env.hints) == python(values)


@settings(max_examples=100, deadline=None)
@given(expressions(depth=2), expressions(depth=2), VALUES)
def test_a_recorded_guard_holds_for_the_hints_it_was_made_on(left, right, values):
    env = ShapeEnv()
    syms = [env.create_symbol(v, SizeSource(X, i)) for i, v in enumerate(values)]
    mapping = dict(zip(S, syms))
    a, b = substitute(left[0], mapping), substitute(right[0], mapping)
    outcome = env.evaluate_bool(sympy.Lt(a, b, evaluate=False), LOC)
    assert outcome == (left[1](values) < right[1](values))
    for guard in env.guards:
        assert evaluate(env.simplify(guard.expr), env.hints) is True
