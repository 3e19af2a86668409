"""PDYN_LOGS topics as loggers under 'pdyn': what each topic logs, and the recompile line
(pdyn/base/logs.py; the lines themselves come from compile_frame and eval_frame)."""

from __future__ import annotations

import logging
from typing import Iterator

import pytest
import torch

import pdyn
from pdyn.base import logs
from pdyn.base.config import LOG_TOPICS, Config


@pytest.fixture
def topics(request: pytest.FixtureRequest) -> Iterator[None]:
    """Turn on the topics named by the test's parameter, as PDYN_LOGS would; off again after."""
    logs.apply(Config(logs=frozenset(request.param)))
    yield
    logs.apply(pdyn.config)


def records(caplog: pytest.LogCaptureFixture, topic: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == f"pdyn.{topic}"]


def add_one(x):
    return x + 1


class OwnInit(Exception):
    """An exception whose class has its own __init__: pdyn cannot rebuild it for a resume function."""

    def __init__(self, what):
        super().__init__(what)


def with_try(x):
    try:
        raise OwnInit("traced")
    except OwnInit:
        return pdyn.graph_break() or x + 1  # a break handling OwnInit: no resume function


@pytest.mark.parametrize("topics", [["graph", "guards", "output_code"]], indirect=True)
def test_graph_guards_and_output_code_are_logged_on_compile(topics, caplog):
    caplog.set_level(logging.DEBUG, logger="pdyn")
    pdyn.optimize(add_one)(torch.ones(2))
    (graph,) = records(caplog, "graph")
    assert graph.startswith("graph of add_one() at ") and "x + 1" in graph
    (guards,) = records(caplog, "guards")
    assert guards.startswith("# pdyn guards for add_one() at ") and "def check(L, G):" in guards
    (code,) = records(caplog, "output_code")
    assert code.startswith("# pdyn frame code for add_one()") and "compiled_graph(" in code


@pytest.mark.parametrize("topics", [["graph_breaks"]], indirect=True)
def test_graph_breaks_topic_names_the_frame_and_reason(topics, caplog):
    caplog.set_level(logging.DEBUG, logger="pdyn")
    pdyn.optimize(with_try)(torch.ones(2))
    (line,) = records(caplog, "graph_breaks")
    assert line.startswith(f"running with_try() at {__file__}:{with_try.__code__.co_firstlineno} eagerly: ")
    assert "except" in line


@pytest.mark.parametrize("topics", [["recompiles"]], indirect=True)
def test_recompile_line_names_function_place_count_guard_and_new_value(topics, caplog):
    caplog.set_level(logging.DEBUG, logger="pdyn")
    w = pdyn.optimize(add_one)
    w(torch.ones(2))
    assert records(caplog, "recompiles") == []
    w(torch.ones(2, 5))
    (line,) = records(caplog, "recompiles")
    first = add_one.__code__.co_firstlineno
    assert line.startswith(f"recompiling add_one() at {__file__}:{first}, compile 2/{pdyn.config.recompile_limit}: ")
    assert "entry 1: L['x']" in line and "failed" in line
    assert "(now float32 cpu size (2, 5))" in line
    assert f"argument of add_one() at {__file__}:{first}" in line


@pytest.mark.parametrize("topics", [[]], indirect=True)
def test_topics_that_are_off_log_nothing_at_info(topics, caplog):
    caplog.set_level(logging.WARNING, logger="pdyn")
    w = pdyn.optimize(add_one)
    w(torch.ones(2)), w(torch.ones(3))
    assert [r for r in caplog.records if r.name.startswith("pdyn")] == []


def test_each_topic_is_a_child_of_the_pdyn_logger():
    for name in LOG_TOPICS:
        assert logs.topic(name).name == f"pdyn.{name}"
        assert logs.topic(name).parent is logging.getLogger("pdyn")
    with pytest.raises(AssertionError, match="unknown log topic"):
        logs.topic("nonsense")


@pytest.mark.parametrize("topics", [["recompiles"]], indirect=True)
def test_apply_sets_levels_of_named_topics_only(topics):
    assert logs.topic("recompiles").isEnabledFor(logging.DEBUG)
    assert not logs.topic("graph").isEnabledFor(logging.INFO)


def test_unknown_topic_is_warned_about(caplog):
    caplog.set_level(logging.WARNING, logger="pdyn")
    try:
        logs.apply(Config(logs=frozenset({"grpah"})))
    finally:
        logs.apply(pdyn.config)
    assert any("unknown topics ['grpah']" in r.getMessage() for r in caplog.records)


def test_counters_start_at_zero():
    assert logs.empty_counters() == dict.fromkeys(logs.COUNTERS, 0)
