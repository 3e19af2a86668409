"""The ShapeEnv's step record (pdyn/shapes/steps.py): each kind of step gets a stable id, undoing
it takes the sound way round, and a program with every step undone still returns what eager does."""

import sympy
import torch
import torch.nn.functional as F

import pdyn
from pdyn.shapes import steps
from pdyn.shapes.shape_env import FloorDiv, ShapeEnv
from pdyn.shapes.steps import KINDS, StepRecord
from pdyn.sources import LocalSource, SizeSource


def script(env):
    """One of each kind of step (in this order): a rewrite, a refinement and its guard, a
    replacement, a decision from the ranges."""
    s0 = env.create_symbol(8, SizeSource(LocalSource("x"), 0))
    s1 = env.create_symbol(8, SizeSource(LocalSource("y"), 0))
    s2 = env.create_symbol(3, SizeSource(LocalSource("x"), 1))
    div = FloorDiv(s2 + 1, 1)
    assert env.evaluate_bool(sympy.Gt(s0, 5, evaluate=False), None)
    assert env.evaluate_bool(sympy.Eq(s0, s1, evaluate=False), None)
    assert env.evaluate_bool(sympy.Ge(s2, 2, evaluate=False), None)
    return (s0, s1, s2), div


def test_without_a_record_nothing_is_noted():
    env = ShapeEnv()
    script(env)
    assert steps.ACTIVE is None and env.validator is None


def test_each_kind_of_step_is_recorded_with_a_stable_id():
    ids = []
    for _ in range(2):
        with steps.recording(StepRecord()) as record:
            script(ShapeEnv())
        ids.append([(s.id, s.before, s.after, s.key) for s in record.steps])
    assert ids[0] == ids[1]
    assert [(i, before, after) for i, before, after, _ in ids[0]] == [
        ("rewrite#1", "FloorDiv(s2 + 1, 1)", "s2 + 1"),
        ("guard#1", "s0 > 5", "guarded"),
        ("refinement#1", "s0 in [2, inf]", "[6, inf]"),
        ("replacement#1", "s0", "s1"),
        ("decision#1", "s2 >= 2", "True"),
    ]


def undoing(kind):
    with steps.recording(StepRecord.undoing_all(frozenset({kind}))) as record:
        env = ShapeEnv()
        syms, div = script(env)
    assert {s.kind for s in record.undone} == {kind}
    return env, syms, div


def test_undoing_each_kind_takes_the_sound_way_round():
    env, _, div = undoing("rewrite")
    assert isinstance(div, FloorDiv) and str(div) == "FloorDiv(s2 + 1, 1)"   # kept as written
    env, (s0, _, _), _ = undoing("refinement")
    assert env.ranges[s0] == (2, float("inf")) and [str(g.expr) for g in env.guards] == ["s0 > 5"]
    env, (s0, s1, _), _ = undoing("guard")   # the sizes it reads pinned instead
    assert s0 in env.specialized and env.replacements[s0] == 8 and not env.guards
    env, (s0, s1, _), _ = undoing("replacement")   # the equality kept as a guard
    assert s1 not in env.replacements and [str(g.expr) for g in env.guards] == ["s0 > 5", "Eq(s0, s1)"]
    env, (_, _, s2), _ = undoing("decision")   # guarded instead of decided from the range
    assert [str(g.expr) for g in env.guards] == ["s0 > 5", "s2 >= 2"]


def test_undoing_only_the_steps_named_by_key():
    with steps.recording(StepRecord()) as first:
        script(ShapeEnv())
    guard = next(s for s in first.steps if s.kind == "guard")
    with steps.recording(StepRecord(keys=frozenset({guard.key}))) as record:
        env = ShapeEnv()
        (s0, _, _), _ = script(env)
    assert [s.id for s in record.undone] == ["guard#1"] and s0 in env.specialized


def program(x, w, n):
    y = F.conv1d(x, w, stride=2, padding=1)
    y = F.max_pool1d(y, 3, 2, ceil_mode=True)
    if y.shape[2] > 3:
        y = y * 2
    z = x[x > 0]
    k = n.item()
    pdyn.check(k <= x.shape[2])
    return y.sum(1) + z.sum() + x[..., :k].sum()


def test_a_program_with_every_step_undone_returns_what_eager_returns():
    f = pdyn.optimize(program, backend="eager")
    with pdyn.config.patch(warn_no_graph=False), steps.recording(StepRecord.undoing_all(frozenset(KINDS))) as record:
        for length, kernel in ((17, 5), (23, 4), (40, 3), (11, 6), (9, 3)):
            x, w, n = torch.randn(2, 3, length), torch.randn(4, 3, kernel), torch.tensor(3)
            torch.testing.assert_close(f(x, w, n), program(x, w, n))
    assert {"guard", "refinement"} <= {s.kind for s in record.undone}
    sympy.core.cache.clear_cache()


def test_undoing_an_assert_dropped_as_known_keeps_it():
    def run(record):
        with steps.recording(record):
            env = ShapeEnv()
            u0 = env.create_unbacked(0, 10, "a test")
            env.assume(sympy.Le(u0, 20, evaluate=False), None, RuntimeError, "too big")
        return env, record

    env, record = run(StepRecord())
    assert [s.id for s in record.steps] == ["assert#1"] and not env.runtime_asserts
    env, record = run(StepRecord.undoing_all(frozenset({"assert"})))
    assert [str(a.expr) for a in env.runtime_asserts] == ["u0 <= 20"]
