"""The recompile policy: what the next trace may assume, from earlier compiles of the same code
(pdyn/hook/recompile_policy.py)."""

import pytest
import torch

from pdyn.base.config import Config
from pdyn.base.errors import Unsupported
from pdyn.hook.recompile_policy import CodeHistory, InheritedSizes, RunEager, decide
from pdyn.sources import ItemSource, LocalSource, SizeSource
from pdyn.shapes.trace_plan import TracePlan
from tests.tracing import trace

X0 = SizeSource(LocalSource("x"), 0)
X1 = SizeSource(LocalSource("x"), 1)
N = SizeSource(LocalSource("n"), None)
ORIGIN = X0


def now(**values):
    """current_value for decide(): this call's value of each origin (x0=..., x1=..., n=...)."""
    names = {"x0": X0, "x1": X1, "n": N}
    table = {names[k]: v for k, v in values.items()}
    return lambda origin: table.get(origin)


def history(*compiles):
    h = CodeHistory()
    for pinned in compiles:
        h.record(pinned)
    return h


def test_first_compile_plans_every_dim_dynamic_with_no_decisions():
    plan = decide(Config(), CodeHistory(), None, now())
    assert isinstance(plan, TracePlan)
    assert (plan.dynamic, plan.specialize_on_read, plan.changing, plan.decisions) == (None, "value", frozenset(), ())


def test_recompile_limit_runs_eagerly():
    h = history(*[{} for _ in range(3)])
    plan = decide(Config(recompile_limit=3), h, None, now())
    assert isinstance(plan, RunEager) and "recompile limit (3)" in plan.reason
    assert isinstance(decide(Config(recompile_limit=4), h, None, now()), TracePlan)


def test_dim_pinned_by_a_value_read_and_now_changing_becomes_a_graph_break():
    h = history({X0: (4, True)})
    plan = decide(Config(), h, None, now(x0=6))
    assert plan.changing == frozenset({X0})
    assert plan.decisions == ("L['x'].size(0): specialized -> graph break",)


def test_dim_pinned_to_the_value_it_still_has_is_not_changing():
    plan = decide(Config(), history({X0: (4, True)}), None, now(x0=4))
    assert plan.changing == frozenset() and plan.decisions == ()


def test_backoff_after_counts_distinct_values():
    config = Config(backoff_after=3)
    h = history({X0: (4, True)})
    assert decide(config, h, None, now(x0=6)).changing == frozenset()
    h.record({X0: (6, True)})
    assert decide(config, h, None, now(x0=8)).changing == frozenset({X0})


def test_specialize_on_any_read_backs_off_to_a_guarded_expression():
    config = Config(specialize_on_read="any")
    plan = decide(config, history({X0: (4, True)}), None, now(x0=5))
    assert plan.decisions == ("L['x'].size(0): specialized -> guarded expression",)
    assert plan.specialize_on_read == "any"


def test_dim_pinned_by_an_equality_and_now_changing_becomes_a_guarded_expression():
    plan = decide(Config(), history({X0: (10, False)}), None, now(x0=12))
    assert plan.decisions == ("L['x'].size(0): specialized -> guarded expression",)
    assert plan.changing == frozenset()  # its bool reads guard the expression already


def test_a_dim_seen_changing_stays_changing_without_a_new_decision():
    h = CodeHistory()
    h.record({X0: (4, True)})
    h.record({}, changing=frozenset({X0}))
    plan = decide(Config(), h, None, now(x0=4))
    assert plan.changing == frozenset({X0}) and plan.decisions == ()


def test_record_counts_compiles_and_sorts_pins_by_kind():
    h = CodeHistory()
    m = SizeSource(LocalSource("m"), None)
    h.record({X0: (4, True), N: (7, False)}, changing=frozenset({m}))
    h.record({X0: (5, True)})
    assert h.compiles == 2
    assert h.specialized == {X0: {4, 5}} and h.compared == {N: {7}} and h.changed == {m}


def test_dynamic_argument_is_carried_into_the_plan():
    assert decide(Config(), CodeHistory(), False, now()).static_inputs is True
    assert decide(Config(), CodeHistory(), None, now()).static_inputs is False
    assert decide(Config(), CodeHistory(), True, now()).dynamic is True


@pytest.mark.parametrize("dynamic, setting, changing, marked, value_read, bool_read", [
    (None, "value", (), False, "specialize", "guard"),
    (None, "any", (), False, "specialize", "specialize"),
    (None, "any", (X0,), False, "break", "guard"),
    (None, "value", (), True, "break", "guard"),
    (True, "value", (), False, "break", "guard"),
    (True, "any", (), False, "break", "guard"),
])
def test_read_policy(dynamic, setting, changing, marked, value_read, bool_read):
    plan = TracePlan(dynamic, setting, frozenset(changing))
    policy = plan.read_policy(lambda origin: marked)
    assert (policy.on_value_read(ORIGIN), policy.on_bool_read(ORIGIN)) == (value_read, bool_read)


def test_trace_under_a_changing_dim_breaks_at_its_value_read():
    def f(x):
        if x.size(0) > 2:  # a bool read still guards
            x = x + 1
        return str(x.size(0))

    plan = TracePlan(None, "value", frozenset({X0}))
    with pytest.raises(Unsupported) as error:
        trace(f, torch.ones(6), plan=plan)
    assert error.value.key == "dynamic_size_read" and str(X0) in error.value.message
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 3


def test_a_loop_count_under_a_changing_dim_is_pinned_by_an_equality_not_a_break():
    """The trace unrolls on a loop count: the code after a break would pin it just the same."""
    def f(x):
        r = range(1, x.size(0))
        n = len(r)  # stays symbolic: s0 - 1, with the guard s0 - 1 >= 0
        return [i for i in r], x.new_zeros(n)

    tx = trace(f, torch.ones(6), plan=TracePlan(None, "value", frozenset({X0})))
    env = tx.ctx.shape_env
    assert {str(s): v.value for s, v in env.specialized.items()} == {"s0": 6}
    assert not next(iter(env.specialized.values())).by_value_read   # an equality, not a value read


def test_trace_under_dynamic_true_keeps_bool_reads_as_guards():
    def f(x):
        return x * 2 if x.size(0) > 4 else x

    tx = trace(f, torch.ones(6), plan=TracePlan(True, "value", frozenset()))
    assert [str(g.expr) for g in tx.ctx.shape_env.guards] == ["s0 > 4"]
    assert tx.ctx.shape_env.specialized == {}


def test_a_resume_function_starts_with_the_sizes_its_parent_saw_changing_as_changing():
    parent = CodeHistory(changed={X0})
    own = SizeSource(LocalSource("pdyn_stack0"), 0)
    other = SizeSource(LocalSource("y"), 1)
    inherited = InheritedSizes({own: X0, other: X1}, parent)
    plan = decide(Config(), CodeHistory(), None, now(), inherited)
    assert plan.changing == frozenset({own})
    assert plan.decisions == ("L['pdyn_stack0'].size(0): changing in the parent frame (L['x'].size(0))",)


def test_a_resume_function_of_a_resume_function_inherits_what_the_first_frame_saw_changing():
    root = CodeHistory(changed={X0})
    middle_own = SizeSource(LocalSource("pdyn_stack0"), 0)
    middle = InheritedSizes({middle_own: X0}, root)       # the middle frame itself never saw it change
    own = SizeSource(LocalSource("h"), 0)
    inherited = InheritedSizes({own: middle_own}, CodeHistory(), middle)
    assert decide(Config(), CodeHistory(), None, now(), inherited).changing == frozenset({own})
    assert InheritedSizes({own: middle_own}, CodeHistory()).changing() == []


def test_decide_reads_sizes_through_their_sources_whatever_the_key():
    """A dict key that is no literal (an enum member) is read, not evaluated as text."""
    import enum

    class Key(enum.Enum):
        A = 1

    size = SizeSource(ItemSource(LocalSource("d"), Key.A), 0)
    h = history({size: (4, True)})
    L = {"d": {Key.A: torch.ones(6)}}
    plan = decide(Config(), h, None, lambda s: s.read(L, {}))
    assert plan.changing == frozenset({size})
