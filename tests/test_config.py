"""Config: defaults and the PDYN_* environment variables (pdyn/config.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pdyn.config import LOG_TOPICS, Config


def test_defaults():
    c = Config()
    assert c.recompile_limit == 8 or "PDYN_RECOMPILE_LIMIT" in __import__("os").environ
    assert c.backoff_after == 2
    assert c.specialize_on_read == "value"
    assert c.debug_stack is False


def test_environment_sets_recompile_limit_and_log_topics(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PDYN_RECOMPILE_LIMIT", "3")
    monkeypatch.setenv("PDYN_LOGS", " recompiles, guards ,,")
    c = Config()
    assert c.recompile_limit == 3
    assert c.logs == frozenset({"recompiles", "guards"})


def test_empty_environment_means_defaults(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PDYN_RECOMPILE_LIMIT", "")
    monkeypatch.delenv("PDYN_LOGS", raising=False)
    c = Config()
    assert c.recompile_limit == 8 and c.logs == frozenset()


def test_explicit_values_win_over_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PDYN_RECOMPILE_LIMIT", "3")
    assert Config(recompile_limit=5).recompile_limit == 5


def test_log_topics_are_the_documented_ones():
    assert set(LOG_TOPICS) >= {"graph", "guards", "graph_breaks", "recompiles", "output_code", "dynamic"}


def test_pdyn_config_is_the_live_instance():
    import pdyn

    assert pdyn.config is sys.modules["pdyn.config"].config
    assert isinstance(pdyn.config, Config)


def test_pdyn_logs_from_the_environment_reaches_stderr():
    code = "import torch, pdyn\npdyn.optimize(lambda x: x + 1)(torch.ones(2))\n"
    env = {**__import__("os").environ, "PDYN_LOGS": "guards"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "[pdyn.guards] # pdyn guards for <lambda>() at <string>:2" in run.stderr
