"""Guards on sizes from a finished ShapeEnv: symbols bound once, pinned dims, dims assumed equal,
expressions; compiled with guard_codegen and run on real tensors (pdyn/guards/shape_guards.py)."""

import sympy
import torch

from pdyn.base.errors import SourceLoc
from pdyn.guards.codegen import build
from pdyn.guards.guards import GuardSet
from pdyn.guards.shape_guards import ExprGuard, SameSizeGuard, StaticDimGuard, SymbolGuard, shape_guards
from pdyn.sources import LocalSource
from pdyn.sources import SizeSource
from pdyn.shapes.shape_env import ShapeEnv

X, Y, N = LocalSource("x"), LocalSource("y"), LocalSource("n")
LOC = SourceLoc(__file__, 12, "forward", 4, 9)


def traced_env():
    """x: (8, 6), y: (8,), n = 5; an op assumed x.size(0) == y.size(0), Python read `x.size(1) > 4`
    and `range(n)`."""
    env = ShapeEnv()
    s0 = env.create_symbol(8, SizeSource(X, 0))
    s1 = env.create_symbol(6, SizeSource(X, 1))
    s2 = env.create_symbol(8, SizeSource(Y, 0))
    s3 = env.create_symbol(5, SizeSource(N, None))
    env.guard_equal(s0, s2, LOC)
    env.evaluate_bool(sympy.Gt(s1, 4), LOC)
    env.specialize(s3, LOC, "range()")
    return env


def checker(env):
    guards = GuardSet()
    for guard in shape_guards(env):
        guards.add(guard)
    return build(guards, "forward() test")


def test_statements_and_sentences_in_binding_order():
    guards = shape_guards(traced_env())
    assert [(type(g), g.sentence()) for g in guards] == [
        (SymbolGuard, "1 <= L['x'].size(0)"),  # size-oblivious: nothing here needs 2
        (SameSizeGuard, "L['y'].size(0) == L['x'].size(0)"),
        (SymbolGuard, "1 <= L['x'].size(1)"),
        (StaticDimGuard, "L['n'] == 5"),
        (ExprGuard, "(L['x'].size(1) > 4)"),
    ]
    assert [g.fail_expr("v", None) for g in guards[:4]] == [
        "(s0 := v.shape[0]) < 1", "v.shape[0] != s0", "(s1 := v.shape[1]) < 1", "v != 5"]


def test_specialized_guards_point_at_the_line_that_read_them():
    guards = shape_guards(traced_env())
    static = [g for g in guards if isinstance(g, StaticDimGuard)]
    assert [g.loc for g in static] == [LOC]
    assert [g.loc for g in guards if isinstance(g, ExprGuard)] == [LOC]


def test_generated_check_binds_each_symbol_once():
    source = checker(traced_env()).source
    assert source.count("s0 :=") == 1 and source.count("s1 :=") == 1
    assert "if not ((s1 > 4)):" in source


def test_check_passes_on_other_sizes_that_keep_the_assumptions():
    check = checker(traced_env()).check
    assert check({"x": torch.ones(8, 6), "y": torch.ones(8), "n": 5}, {}) is None
    assert check({"x": torch.ones(3, 9), "y": torch.ones(3), "n": 5}, {}) is None


def test_check_names_the_first_failing_assumption():
    check = checker(traced_env()).check
    assert check({"x": torch.ones(0, 6), "y": torch.ones(0), "n": 5}, {}) == "1 <= L['x'].size(0)"
    assert check({"x": torch.ones(1, 6), "y": torch.ones(1), "n": 5}, {}) is None  # size-oblivious: 1 shares it
    assert check({"x": torch.ones(8, 6), "y": torch.ones(7), "n": 5}, {}) == "L['y'].size(0) == L['x'].size(0)"
    assert check({"x": torch.ones(8, 6), "y": torch.ones(8), "n": 6}, {}) == "L['n'] == 5"
    assert check({"x": torch.ones(8, 3), "y": torch.ones(8), "n": 5}, {}) == "(L['x'].size(1) > 4)"


def test_check_of_a_missing_input_reports_the_exception():
    check = checker(traced_env()).check
    assert check({"x": torch.ones(8, 6)}, {}).startswith("a guard raised KeyError")


def test_pinned_dim_of_a_tensor_is_a_static_dim_guard():
    env = ShapeEnv()
    s0 = env.create_symbol(10, SizeSource(X, 1))
    env.evaluate_bool(sympy.Eq(s0, 10, evaluate=False), LOC)
    (guard,) = shape_guards(env)
    assert isinstance(guard, StaticDimGuard) and guard.sentence() == "L['x'].size(1) == 10"
    check = checker(env).check
    assert check({"x": torch.ones(2, 10)}, {}) is None
    assert check({"x": torch.ones(2, 11)}, {}) == "L['x'].size(1) == 10"


def test_negative_int_input_keeps_its_negative_range():
    env = ShapeEnv()
    env.create_symbol(-4, SizeSource(N, None))
    (guard,) = shape_guards(env)
    assert isinstance(guard, SymbolGuard) and guard.sentence() == "L['n'] <= -1"
    check = checker(env).check
    assert check({"n": -9}, {}) is None and check({"n": 3}, {}) == "L['n'] <= -1"


def test_expression_guard_with_integer_division_is_exact():
    env = ShapeEnv()
    s0 = env.create_symbol(12, SizeSource(X, 0))
    env.evaluate_bool(sympy.Eq(sympy.Mod(s0, 4, evaluate=False), 0, evaluate=False), LOC)
    env.evaluate_bool(sympy.Lt(sympy.floor(s0 / 5), 3, evaluate=False), LOC)
    check = checker(env).check
    assert check({"x": torch.ones(8)}, {}) is None
    assert check({"x": torch.ones(10)}, {}) is not None   # 10 % 4 != 0
    assert check({"x": torch.ones(16)}, {}) is not None   # 16 // 5 == 3


def test_expression_guard_with_math_hoists_the_module():
    env = ShapeEnv()
    s0 = env.create_symbol(16, SizeSource(X, 0))
    env.evaluate_bool(sympy.Gt(sympy.sqrt(s0), 3, evaluate=False), LOC)
    code = checker(env)
    assert "if not ((_math.sqrt(s0) > 3)):" in code.source
    assert code.check({"x": torch.ones(16)}, {}) is None
    assert code.check({"x": torch.ones(9)}, {}) == "(math.sqrt(L['x'].size(0)) > 3)"


def test_guard_that_simplified_to_true_is_dropped():
    env = ShapeEnv()
    s0 = env.create_symbol(6, SizeSource(X, 0))
    env.evaluate_bool(sympy.Gt(s0, 4), LOC)
    env.specialize(s0, LOC, "range()")
    assert [type(g) for g in shape_guards(env)] == [StaticDimGuard]
