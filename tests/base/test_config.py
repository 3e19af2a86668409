"""Config: defaults, the PDYN_* environment variables, and the live settings behind `pdyn.config`
(pdyn/base/config.py)."""

from __future__ import annotations

import copy
import dataclasses
import os
import subprocess
import sys

import pytest
import torch

import pdyn
from pdyn.base.config import LOG_TOPICS, Config, Settings, snapshot


def test_defaults():
    c = Config()
    assert c.recompile_limit == 8 or "PDYN_RECOMPILE_LIMIT" in os.environ
    assert c.backoff_after == 2
    assert c.specialize_on_read == "value"
    assert c.triton_fast_launch is True or os.environ.get("PDYN_TRITON_FAST_LAUNCH") == "0"


def test_environment_sets_recompile_limit_and_log_topics(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PDYN_RECOMPILE_LIMIT", "3")
    monkeypatch.setenv("PDYN_LOGS", " recompiles, guards ,,")
    c = Config()
    assert c.recompile_limit == 3
    assert c.logs == frozenset({"recompiles", "guards"})


def test_environment_sets_cache_dir_and_fast_launch(monkeypatch: pytest.MonkeyPatch, tmp_path):
    monkeypatch.setenv("PDYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PDYN_TRITON_FAST_LAUNCH", "0")
    c = Config()
    assert c.cache_dir == str(tmp_path) and c.triton_fast_launch is False
    monkeypatch.delenv("PDYN_CACHE_DIR")
    monkeypatch.setenv("PDYN_TRITON_FAST_LAUNCH", "1")
    c = Config()
    assert c.cache_dir.endswith(f"pdyn_{os.getuid()}") and c.triton_fast_launch is True


def test_empty_environment_means_defaults(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PDYN_RECOMPILE_LIMIT", "")
    monkeypatch.delenv("PDYN_LOGS", raising=False)
    c = Config()
    assert c.recompile_limit == 8 and c.logs == frozenset()


def test_explicit_values_win_over_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PDYN_RECOMPILE_LIMIT", "3")
    assert Config(recompile_limit=5).recompile_limit == 5


def test_config_is_frozen():
    c = Config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.recompile_limit = 3  # type: ignore[misc]
    assert dataclasses.replace(c, recompile_limit=3).recompile_limit == 3 and c.recompile_limit != 3


def test_log_topics_are_the_documented_ones():
    assert set(LOG_TOPICS) >= {"graph", "guards", "graph_breaks", "recompiles", "output_code", "dynamic"}


def test_pdyn_config_is_the_live_settings():
    assert pdyn.config is sys.modules["pdyn.base.config"].config
    assert isinstance(pdyn.config, Settings) and isinstance(pdyn.config.snapshot(), Config)


def test_assignment_replaces_the_snapshot_and_leaves_taken_ones_alone():
    settings = Settings(Config(recompile_limit=8))
    before = settings.snapshot()
    settings.recompile_limit = 3
    assert settings.recompile_limit == 3 and settings.snapshot().recompile_limit == 3
    assert before.recompile_limit == 8  # a compile that took it keeps its values
    assert snapshot(settings) is settings.snapshot() and snapshot(before) is before


def test_settings_copy_keeps_its_own_snapshot():
    settings = Settings(Config(recompile_limit=4))
    copied = copy.copy(settings)
    copied.recompile_limit = 5
    assert (settings.recompile_limit, copied.recompile_limit) == (4, 5)


def test_unknown_setting_is_an_error_naming_the_known_ones():
    settings = Settings()
    with pytest.raises(AttributeError, match="no setting recompile_limt; the settings are backoff_after"):
        settings.recompile_limt = 3


def test_patch_restores_the_settings_after_the_block():
    settings = Settings(Config(recompile_limit=8, backoff_after=2))
    with settings.patch(recompile_limit=3, backoff_after=4) as inside:
        assert (settings.recompile_limit, settings.backoff_after) == (3, 4) and inside.recompile_limit == 3
    assert (settings.recompile_limit, settings.backoff_after) == (8, 2)
    with pytest.raises(RuntimeError), settings.patch(recompile_limit=1):
        raise RuntimeError
    assert settings.recompile_limit == 8


def test_a_change_to_pdyn_config_reaches_the_next_compile_of_an_optimized_function():
    fn = pdyn.optimize(lambda x: x + 1, backend="eager", dynamic=False)
    with pdyn.config.patch(recompile_limit=2), pytest.warns(UserWarning, match="recompile limit"):
        for n in range(2, 6):
            torch.testing.assert_close(fn(torch.ones(n)), torch.ones(n) + 1)
    assert pdyn.stats(fn)["compiles"] == 2


def test_pdyn_logs_from_the_environment_reaches_stderr():
    code = "import torch, pdyn\npdyn.optimize(lambda x: x + 1)(torch.ones(2))\n"
    env = {**os.environ, "PDYN_LOGS": "guards"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "[pdyn.guards] # pdyn guards for <lambda>() at <string>:2" in run.stderr
