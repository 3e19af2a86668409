"""PDYN_LOGS=dynamic shows data-dependent sizes: a `u0 = ...` line for each unbacked symbol and
a `runtime assert ...` line for each fact the trace assumed about them."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import pathlib

import pytest
import torch

import pdyn
from pdyn.base import logs
from pdyn.base.config import Config

ROOT = pathlib.Path(__file__).resolve().parents[2]


def split_sums(values, lengths):
    return [p.sum() for p in values.split(lengths.tolist())]


@pytest.fixture
def dynamic_topic():
    logs.apply(Config(logs=frozenset({"dynamic"})))
    yield
    logs.apply(pdyn.config)


def test_dynamic_topic_logs_unbacked_symbols_and_runtime_asserts(dynamic_topic, caplog):
    caplog.set_level(logging.DEBUG, logger="pdyn")
    pdyn.optimize(split_sums, backend="eager")(torch.randn(5), torch.tensor([2, 3]))
    lines = [r.getMessage() for r in caplog.records if r.name == "pdyn.dynamic"]
    assert any(": u0 = lengths.tolist() at " in line and line.endswith("in [-inf, inf]") for line in lines), lines
    assert any(": u1 = lengths.tolist() at " in line for line in lines), lines
    assert any(": runtime assert Eq(u0 + u1, s0) (split: split sizes add up to the dim) at " in line
               for line in lines), lines


def test_pdyn_logs_environment_variable_prints_them():
    program = ("import torch, pdyn\n"
               "def f(x, m):\n"
               "    y = x[m]\n"
               "    pdyn.check(y.shape[0] <= 6, 'too many')\n"
               "    return y * 2\n"
               "pdyn.optimize(f, backend='eager')(torch.randn(8), torch.arange(8) < 3)\n")
    env = {**os.environ, "PDYN_LOGS": "dynamic", "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300,
                            cwd=ROOT, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout + result.stderr
    assert "u0 = getitem() at <string>:3, in [0, inf]" in out, out  # (x.size(0) is a symbol: no static bound)
    assert "runtime assert u0 <= 6 (too many) at <string>:4" in out, out
