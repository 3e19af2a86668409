"""Translation validation: planted faults in pdyn's symbolic reasoning are named by z3, with the step,
the expressions, the user's line and sizes that show it; correct programs pass."""

import pytest
import sympy
import torch
import torch.nn.functional as F

import pdyn
from pdyn.ops import shape_rules_nn
from tests.planted_faults import branches_on_length, drop_expr_guards, split_floor_division
from pdyn.shapes import shape_env as shape_env_module
from pdyn.shapes.shape_env import FloorDiv, ShapeEnv
from pdyn.shapes.validation import ToZ3, ValidationError, ValidationFailure, Validator
from pdyn.sources import LocalSource, SizeSource

z3 = pytest.importorskip("z3")


@pytest.fixture(autouse=True)
def validation_on():
    with pdyn.config.patch(translation_validation=True):
        yield


def conv_pool(x, w):
    y = F.conv1d(x, w, stride=2, padding=1)
    y = F.max_pool1d(y, 3, 2, ceil_mode=True)
    z = y.reshape(y.shape[0], -1)
    if x.shape[2] > 10:
        z = z * 2
    return torch.cat([z, z], 1) + z.sum(1, keepdim=True)


def test_a_correct_program_validates_at_every_size():
    f = pdyn.optimize(conv_pool, backend="eager")
    for n in (17, 23, 40, 11):
        x, w = torch.randn(2, 3, n), torch.randn(4, 3, 5)
        torch.testing.assert_close(f(x, w), conv_pool(x, w))
    assert pdyn.stats(f)["compiles"] == 1


def test_data_dependent_sizes_and_runtime_asserts_validate():
    def g(x, n):
        y = x[x > 0]
        k = n.item()
        pdyn.check(k <= x.shape[0])
        return y.sum() + x[:k].sum()

    f = pdyn.optimize(g, backend="eager")
    for size in (5, 9):
        x = torch.randn(size)
        torch.testing.assert_close(f(x, torch.tensor(3)), g(x, torch.tensor(3)))


def test_a_wrong_rewrite_rule_is_named_with_a_counterexample(monkeypatch, request):
    """FloorDiv((a + c), b) split into FloorDiv(a, b) + FloorDiv(c, b): right at these sizes, wrong
    at others."""
    split_floor_division(monkeypatch, request)
    f = pdyn.optimize(conv_pool, backend="eager")
    x, w = torch.randn(2, 3, 18), torch.randn(4, 3, 6)   # floor(14/2) = 9 + floor(-6/2) + 1: agrees here
    with pytest.raises(ValidationError) as info:
        f(x, w)
    e = info.value
    assert "conv1d output size of spatial dim 0" in e.step
    assert e.loc is not None and e.loc.lineno == conv_pool.__code__.co_firstlineno + 1
    sizes = e.counterexample
    length, kernel = sizes["L['x'].size(2)"], sizes["L['w'].size(2)"]
    assert (length + 2 - kernel) // 2 != length // 2 + (2 - kernel) // 2   # the rewrite is wrong there
    assert "F.conv1d(x, w, stride=2, padding=1)" in str(e)


def test_an_off_by_one_shape_rule_that_agrees_at_the_hints_is_named(monkeypatch):
    """A window size rounded up: right when the span divides the stride (as here), wrong elsewhere."""
    right = shape_rules_nn.window_size

    def rounds_up(c, size, k, s, p, d, ceil_mode=False):
        return right(c, size, k, s, p, d, True) if not ceil_mode else right(c, size, k, s, p, d, ceil_mode)

    monkeypatch.setattr(shape_rules_nn, "window_size", rounds_up)

    def g(x, w):
        return F.conv1d(x, w, stride=2)

    f = pdyn.optimize(g, backend="eager")
    with pytest.raises(ValidationError) as info:
        f(torch.randn(1, 2, 9), torch.randn(3, 2, 3))   # (9 - 3) / 2 is exact
    assert "shape rule's conv1d output size" in info.value.step
    assert info.value.loc.lineno == g.__code__.co_firstlineno + 1
    n, k = info.value.counterexample["L['x'].size(2)"], info.value.counterexample["L['w'].size(2)"]
    assert (n - k) % 2 != 0


def test_an_off_by_one_at_the_hints_is_an_error_under_check_hints(monkeypatch):
    right = shape_rules_nn.window_size
    monkeypatch.setattr(shape_rules_nn, "window_size", lambda c, *a: right(c, *a) + 1)

    def g(x, w):
        return F.conv1d(x, w)

    with pdyn.config.patch(translation_validation=False, check_hints=True):
        f = pdyn.optimize(g, backend="eager")
        with pytest.raises(ValidationFailure, match="conv1d: the shape rule gives sizes"):
            f(torch.randn(1, 2, 9), torch.randn(3, 2, 3))


def test_a_dropped_guard_is_named_with_the_sizes_it_lets_through(monkeypatch):
    drop_expr_guards(monkeypatch)
    g = branches_on_length
    f = pdyn.optimize(g, backend="eager")
    with pytest.raises(ValidationError) as info:
        f(torch.randn(8))
    e = info.value
    assert "the final guard set" in e.step and str(e.before) == "s0 > 5"
    assert e.loc.lineno == g.__code__.co_firstlineno + 1
    assert 1 <= e.counterexample["L['x'].size(0)"] <= 5


def test_a_wrong_range_refinement_is_named(monkeypatch):
    flipped = dict(shape_env_module._FLIPPED)
    flipped[sympy.Lt] = sympy.Lt   # `5 < s0` read as `s0 < 5`
    monkeypatch.setattr(shape_env_module, "_FLIPPED", flipped)
    env = ShapeEnv(validator=Validator())
    s0 = env.create_symbol(8, SizeSource(LocalSource("x"), 0))
    with pytest.raises(ValidationError, match="a range refinement") as info:
        env.evaluate_bool(sympy.Lt(5, s0, evaluate=False), None)
    assert info.value.counterexample["L['x'].size(0)"] >= 6


def test_a_wrong_simplification_is_named(monkeypatch):
    env = ShapeEnv(validator=Validator())
    s0 = env.create_symbol(8, SizeSource(LocalSource("x"), 0))
    s1 = env.create_symbol(3, SizeSource(LocalSource("x"), 1))
    env.specialize(s0, None, "a test")
    monkeypatch.setattr(shape_env_module, "substitute", lambda expr, mapping: expr.xreplace({s0: 9}))
    with pytest.raises(ValidationError, match="a simplification") as info:
        env.simplify(s0 * s1)
    assert str(info.value.before) == "s0*s1" and str(info.value.after) == "9*s1"


def test_a_decision_without_a_guard_is_checked(monkeypatch):
    env = ShapeEnv(validator=Validator())
    s0 = env.create_symbol(8, SizeSource(LocalSource("x"), 0))
    env.ranges[s0] = (7, float("inf"))   # a range no guard established
    with pytest.raises(ValidationError, match="decided without a guard"):
        env.evaluate_bool(sympy.Gt(s0, 6, evaluate=False), None)


@pytest.mark.parametrize("expr, values", [
    (FloorDiv(sympy.Symbol("a", integer=True), sympy.Symbol("b", integer=True)), [(7, 2), (-7, 2), (7, -2), (-7, -2)]),
    (sympy.Mod(sympy.Symbol("a", integer=True), sympy.Symbol("b", integer=True), evaluate=False),
     [(7, 3), (-7, 3), (7, -3), (-7, -3)]),
    (shape_env_module.CeilDiv(sympy.Symbol("a", integer=True), sympy.Symbol("b", integer=True)), [(7, 2), (-7, 2)]),
    (sympy.floor(sympy.Symbol("a", integer=True) / 3), [(7, 0), (-7, 0)]),
    (sympy.Max(sympy.Symbol("a", integer=True), 2 * sympy.Symbol("b", integer=True)), [(1, 5), (9, 1)]),
    (sympy.Piecewise((sympy.Symbol("b", integer=True), sympy.Eq(sympy.Symbol("a", integer=True), 1)),
                     (sympy.Symbol("a", integer=True), True)), [(1, 5), (4, 5)]),
])
def test_the_z3_translation_computes_what_python_computes(expr, values):
    a, b = sympy.Symbol("a", integer=True), sympy.Symbol("b", integer=True)
    translate = ToZ3(z3)
    for va, vb in values:
        want = int(expr.subs({a: va, b: vb}))
        got = z3.simplify(z3.substitute(translate(expr), (translate(a), z3.IntVal(va)), (translate(b), z3.IntVal(vb))))
        assert got.as_long() == want, (expr, va, vb)


def test_a_missing_z3_names_the_extra(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_z3(name, *args, **kwargs):
        if name == "z3":
            raise ImportError("no z3")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_z3)
    with pytest.raises(pdyn.UserError, match=r"pip install pdyn\[validate\]"):
        Validator()
