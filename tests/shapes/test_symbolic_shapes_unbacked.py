"""Unbacked symbols in the ShapeEnv: sizes only the data decides (u0, ...) have a range and no
hint; questions the ranges settle are answered, others are data-dependent reads; facts the trace
assumes are runtime asserts (an equality with a size replaces the symbol)."""

import math

import pytest
import sympy

from pdyn.base.errors import SourceLoc
from pdyn.ops.shape_rules import OpCall
from pdyn.shapes.shape_env import DataDependentRead, ShapeEnv
from pdyn.sources import LocalSource, SizeSource

LOC = SourceLoc("f.py", 3)


def env_with_sizes(*hints):
    env = ShapeEnv()
    syms = [env.create_symbol(h, SizeSource(LocalSource("x"), i)) for i, h in enumerate(hints)]
    return env, syms


def test_unbacked_symbol_has_a_range_and_no_hint():
    env = ShapeEnv()
    u = env.create_unbacked(0, 10, "nonzero() at f.py:3")
    assert u.name == "u0" and env.ranges[u] == (0, 10) and u not in env.hints
    assert env.create_unbacked(0, math.inf, "item()").name == "u1"
    with pytest.raises(DataDependentRead, match="u0 = nonzero"):
        env.hint(u + 1)
    assert env.unbacked_in(u * 2 + 1) == [u]
    assert env.events[0] == "u0 = nonzero() at f.py:3, in [0, 10]"


def test_range_settles_some_questions_and_reads_the_rest():
    env = ShapeEnv()
    u = env.create_unbacked(0, 10, "nonzero()")
    assert env.evaluate_bool(sympy.Ge(u, 0), LOC) is True
    assert env.evaluate_bool(sympy.Gt(u, 10), LOC) is False
    assert env.evaluate_bool(sympy.Le(u + 1, 11), LOC) is True   # through the shifted-range reasoning
    with pytest.raises(DataDependentRead):
        env.evaluate_bool(sympy.Eq(u, 3), LOC)
    assert env.guards == []   # nothing about data becomes a guard


def test_zero_one_questions_are_size_oblivious_in_shape_rules():
    env = ShapeEnv()
    u = env.create_unbacked(0, math.inf, "x[mask]")
    call = OpCall(env, "add", (), {}, LOC)
    assert call.is_one(u) is False      # a data-dependent size is not taken as 1 (no break, no guard)
    assert env.guards == [] and env.runtime_asserts == []


def test_assumed_equality_with_a_size_replaces_the_symbol_and_is_a_runtime_assert():
    env, (s0,) = env_with_sizes(6)
    u = env.create_unbacked(0, math.inf, "split")
    env.assume(sympy.Eq(u, s0), LOC, RuntimeError, "sizes must match")
    assert env.simplify(u + 1) == s0 + 1
    (fact,) = env.runtime_asserts
    assert fact.expr == sympy.Eq(u, s0) and fact.error is RuntimeError and fact.loc == LOC
    assert env.guards == []
    assert any(e.startswith("runtime assert Eq(u0, s0) (sizes must match) at f.py:3") for e in env.events)


def test_assumed_bound_refines_the_range_and_a_known_fact_records_nothing():
    env = ShapeEnv()
    u = env.create_unbacked(0, math.inf, "item()")
    env.assume(sympy.Le(u, 5), LOC, RuntimeError, "too big")
    assert env.ranges[u] == (0, 5)
    env.assume(sympy.Le(u, 7), LOC, RuntimeError, "known already")
    assert [a.message for a in env.runtime_asserts] == ["too big"]


def test_known_reasons_over_sums_of_unbacked_sizes():
    env = ShapeEnv()
    us = [env.create_unbacked(0, math.inf, "tolist()") for _ in range(3)]
    assert env.known(sympy.Ge(sum(us), 0)) is True
    assert env.known(sympy.Eq(sum(us), 4)) is None
    assert env.known(sympy.Lt(us[0] + us[1], 0)) is False


def test_a_count_is_bounded_by_its_inputs_symbolic_numel_and_nothing_more_is_concluded():
    env, (s0, s1) = env_with_sizes(5, 3)
    u = env.create_unbacked(0, math.inf, "nonzero()")
    env.bound_above(u, s0 * s1)
    assert env.known(sympy.Le(u, s0 * s1)) is True
    assert env.known(sympy.Lt(u, s0 * s1 + 1)) is True
    assert env.known(sympy.Ge(s0 * s1 - u, 0)) is True
    assert env.known(sympy.Le(2 * u, 2 * s0 * s1 + 3)) is True
    assert env.known(sympy.Lt(u, s0 * s1)) is None      # u may equal the numel
    assert env.known(sympy.Le(u, s0)) is None           # a tighter bound is not known
    assert env.known(sympy.Ge(u, 1)) is None            # the bound says nothing from below
    assert env.known(sympy.Le(u * u, s0 * s1)) is None  # not linear in u: not concluded
    assert env.events == ["u0 = nonzero(), in [0, inf]"]  # a fact by construction: no assert, no guard
