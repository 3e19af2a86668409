"""PDYN_TRACE_DIR and `python -m pdyn.report`: the record of each compile holds what the logs say
(the recompile's failing guard and user line, the break, the specializations with their line, the
graph, the backend's kernels), and the page shows it, self-contained and well formed."""

from __future__ import annotations

import inspect
import json
import pathlib
import subprocess
import sys
import warnings
from html.parser import HTMLParser

import torch

import pdyn
from pdyn.report import load, render

ROOT = pathlib.Path(__file__).resolve().parent.parent


def program(x, w):
    h = torch.relu(x @ w)
    print("", end="")                 # a graph break
    for i in range(x.size(0)):        # pins x.size(0): one compile of the resume function per length
        h = h + i
    return h


def line_of(text: str) -> int:
    lines, _ = inspect.getsourcelines(program)
    first = program.__code__.co_firstlineno
    return first + next(i for i, line in enumerate(lines) if text in line)


def run_recorded(tmp_path: pathlib.Path, backend: str = "eager") -> tuple[list[dict], object]:
    pdyn.reset()
    f = pdyn.optimize(program, backend=backend)
    with pdyn.config.patch(trace_dir=str(tmp_path)):
        for n in (3, 5):
            x, w = torch.randn(n, 4), torch.randn(4, 2)
            assert torch.equal(f(x, w), program(x, w))
    return load(tmp_path), f


def test_each_compile_is_recorded_with_its_reasons_and_lines(tmp_path):
    records, f = run_recorded(tmp_path)
    assert [r["event"] for r in records] == ["compile"] * 3
    assert len(records) == pdyn.stats()["compiles"]
    first, resume, again = records
    assert first["function"].startswith("program() at ") and first["compile"] == 1 and first["seconds"] > 0
    assert first["break"] == {"key": "print", "reason": first["break"]["reason"], "file": __file__,
                              "line": line_of('print("", end="")')}
    assert first["ops"] == ["matmul", "relu"] and "relu" in first["graph"]
    assert first["recompile_reasons"] == [] and "def check(L, G)" in first["guards"]
    assert resume["function"].startswith("pdyn_resume_in_program") and resume["compile"] == 1
    assert again["function"] == resume["function"] and again["compile"] == 2
    reason, = again["recompile_reasons"]
    assert reason["entry"] == 1 and reason["guard"] == "L['x'].size(0) == 3" and reason["now"] == "(now 5)"
    assert reason["where"].startswith(f"{__file__}:{line_of('for i in range')}")
    assert any(f"specialized to 5 by range() at {__file__}:{line_of('for i in range')}" in s
               for s in again["specializations"])
    assert again["backend"] == "eager" and again["compiled"] is None


def test_nothing_is_written_without_a_trace_dir(tmp_path):
    pdyn.reset()
    f = pdyn.optimize(program)
    f(torch.randn(3, 4), torch.randn(4, 2))
    assert pdyn.config.trace_dir is None and not list(tmp_path.iterdir())


def test_triton_records_its_kernels_and_calls_left_to_torch(tmp_path):
    records, _ = run_recorded(tmp_path, backend="triton")
    compiled = records[0]["compiled"]
    assert compiled["runs_with_torch"] is False and compiled["extern"]   # the matmul calls torch
    assert compiled["kernels"] and all("@triton.jit" in k for k in compiled["kernels"])
    assert "def call(" in compiled["wrapper"]


class Checker(HTMLParser):
    """Balanced tags, and nothing that would fetch or run anything."""

    VOID = {"meta", "br", "hr", "img", "input", "link"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "link", "img", "iframe") or any(k in ("src", "onclick", "onload") for k, _ in attrs):
            self.errors.append(f"<{tag}> {attrs}")
        if any(k == "href" and not v.startswith("#") for k, v in attrs):
            self.errors.append(f"external link {attrs}")
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag not in self.VOID and (not self.stack or self.stack.pop() != tag):
            self.errors.append(f"unbalanced </{tag}>")


def test_report_page_is_self_contained_and_shows_the_compiles(tmp_path):
    run_recorded(tmp_path)
    out = subprocess.run([sys.executable, "-m", "pdyn.report", str(tmp_path)], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "report.html").read_text()
    checker = Checker()
    checker.feed(page)
    assert not checker.errors and not checker.stack, (checker.errors, checker.stack)
    assert "url(" not in page and "@import" not in page
    assert page.count('<details id="c') == 3 and page.count("<rect") == 3   # one bar per compile
    assert "3 compiles of 2 functions" in page
    assert "graph break [print] at line" in page
    assert "recompiled: L[&#x27;x&#x27;].size(0) == 3 failed (now 5)" in page
    assert f"test_report.py:{line_of('for i in range')}" in page
    assert "relu" in page and "def check(L, G)" in page


def test_records_of_several_processes_render_in_time_order(tmp_path):
    base = {"event": "compile", "seconds": 0.1, "compile": 1, "recompile_limit": 8, "ops": [], "file": "a.py",
            "line": 1, "recompile_reasons": [], "specializations": []}
    (tmp_path / "pdyn_trace_2.jsonl").write_text(json.dumps({**base, "time": 5.0, "function": "late()"}) + "\n")
    (tmp_path / "pdyn_trace_1.jsonl").write_text(json.dumps({**base, "time": 9.0, "function": "later()"}) + "\n"
                                                  + json.dumps({**base, "time": 1.0, "function": "early()"}) + "\n")
    page = render(load(tmp_path))
    assert page.index("<h3>early()") < page.index("<h3>late()") < page.index("<h3>later()")


def test_the_recompile_limit_is_recorded_as_running_eagerly(tmp_path):
    pdyn.reset()

    def pinned(x):
        return x * [0, 1, 2, 3, 4, 5][x.size(0)]   # a list index reads the size: one compile per size

    f = pdyn.optimize(pinned)
    with pdyn.config.patch(trace_dir=str(tmp_path), recompile_limit=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in (3, 4):
            assert torch.equal(f(torch.ones(n)), pinned(torch.ones(n)))
    records = load(tmp_path)
    assert [r["event"] for r in records] == ["compile", "run_eagerly"]
    assert "limit" in records[1]["reason"] and records[1]["backend"] == "eager"
    assert "runs eagerly from now on" in render(records)
