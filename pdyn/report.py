"""`python -m pdyn.report DIR [-o FILE]`: the compile records that `PDYN_TRACE_DIR=DIR` wrote,
rendered as one self-contained HTML page (inline CSS, no script, nothing fetched).

The page has a timeline of the compiles of each function (a resume function is a function of its
own), then per function each compile: why it recompiled (each entry's failing guard, this call's
value, the user line that made the guard), where its graph broke, the sizes it specialized, its
graph with the user's lines, its kernels and the calls left to torch, its guards and frame code.
"""

from __future__ import annotations

import argparse
import html
import json
import pathlib
import re
import sys
from typing import Any

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1100px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; } h3 { font-size: 15px; margin: 20px 0 6px; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
details { border: 1px solid #ddd; border-radius: 4px; margin: 4px 0; padding: 2px 8px; }
details > summary { cursor: pointer; } details details { border: none; padding-left: 0; }
.recompile { color: #b35900; } .break { color: #b00020; } .eager { color: #666; font-weight: bold; }
.muted { color: #666; } ul { margin: 4px 0; } code { font-size: 12px; }
svg text { font: 11px sans-serif; }
"""
COLORS = {"first": "#1f6fb4", "recompile": "#e07b24", "eager": "#8c8c8c"}


def load(directory: pathlib.Path) -> list[dict[str, Any]]:
    """Every record under `directory`, oldest first (several processes may have written there)."""
    records = []
    for path in sorted(directory.glob("pdyn_trace_*.jsonl")):
        records += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return sorted(records, key=lambda r: r["time"])


def by_function(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Records per function and backend (one function optimized with two backends has two caches)."""
    functions: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        functions.setdefault(f'{record["function"]} [{record.get("backend", "?")}]', []).append(record)
    return functions


def kind(record: dict[str, Any]) -> str:
    if record["event"] != "compile" or record.get("eager"):
        return "eager"
    return "recompile" if record.get("recompile_reasons") else "first"


def where(file: str | None, line: int | None) -> str:
    return f"{file}:{line}" if file else "?"


def summary_of(record: dict[str, Any]) -> str:
    """One line for a compile: number, time, ops, break, and why it recompiled."""
    if record["event"] != "compile":
        return f'<span class="eager">runs eagerly from now on: {html.escape(record["reason"])}</span>'
    parts = [f'compile {record["compile"]}/{record["recompile_limit"]}', f'{record["seconds"]:.3f} s',
             f'{len(record["ops"])} ops']
    if record.get("break"):
        b = record["break"]
        parts.append(f'<span class="break">graph break [{html.escape(b["key"])}] at line {b["line"]}</span>')
    if record.get("eager"):
        parts.append(f'<span class="eager">runs eagerly [{html.escape(record["eager"]["key"])}]</span>')
    reasons = record.get("recompile_reasons") or []
    if reasons:
        last = reasons[-1]
        line = last["where"].split("  ")[0].rsplit("/", 1)[-1]   # "model.py:9" of "/path/model.py:9  code"
        parts.append(f'<span class="recompile">recompiled: {html.escape(str(last["guard"]))} failed '
                     f'{html.escape(last["now"])}{f" (guard from {html.escape(line)})" if line else ""}</span>')
    return " · ".join(parts)


def timeline(functions: dict[str, list[dict[str, Any]]], start: float, anchors: dict[int, str]) -> str:
    """One row per function; each compile a bar from its start over its duration, linking to it."""
    end = max(r["time"] + r.get("seconds", 0) for rs in functions.values() for r in rs)
    span, label_w, plot_w, row_h = max(end - start, 1e-6), 300, 640, 22
    rows = []
    for row, (function, records) in enumerate(functions.items()):
        y = 24 + row * row_h
        name = function if len(function) < 48 else "..." + function[-45:]
        rows.append(f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">{html.escape(name)}</text>')
        for record in records:
            x = label_w + (record["time"] - start) / span * plot_w
            width = max(3.0, record.get("seconds", 0) / span * plot_w)
            tip = html.escape(f'{function}: {html.unescape(re.sub("<[^>]+>", "", summary_of(record)))}')
            rows.append(f'<a href="#{anchors[id(record)]}"><rect x="{x:.1f}" y="{y + 3}" width="{width:.1f}" '
                        f'height="{row_h - 8}" fill="{COLORS[kind(record)]}"><title>{tip}</title></rect></a>')
    height = 40 + len(functions) * row_h
    axis = (f'<text x="{label_w}" y="14">0 s</text>'
            f'<text x="{label_w + plot_w}" y="14" text-anchor="end">{span:.2f} s</text>')
    legend = " ".join(f'<span style="color:{c}">&#9632;</span> {k}' for k, c in COLORS.items())
    return (f'<svg width="{label_w + plot_w + 20}" height="{height}" role="img">{axis}{"".join(rows)}</svg>'
            f'<p class="muted">{legend} (first compile, recompile, runs eagerly); a bar\'s width is its compile '
            'time; click one for its details.</p>')


def pre(title: str, text: str | None, open_: bool = False) -> str:
    if not text:
        return ""
    return f'<details{" open" if open_ else ""}><summary>{title}</summary><pre>{html.escape(text)}</pre></details>'


def items(title: str, values: list[str]) -> str:
    if not values:
        return ""
    return f'<p>{title}</p><ul>{"".join(f"<li><code>{html.escape(v)}</code></li>" for v in values)}</ul>'


def details_of(record: dict[str, Any], anchor: str) -> str:
    """One compile, folded: the line of `summary_of`, then everything the record holds."""
    if record["event"] != "compile":
        return f'<p id="{anchor}">{summary_of(record)}</p>'
    body = []
    reasons = record.get("recompile_reasons") or []
    body.append(items("Why it recompiled (each earlier entry's failing guard, this call's value, where the guard "
                      "came from):", [f'entry {r["entry"]}: {r["guard"]} failed {r["now"]}  ({r["where"]})'
                                      for r in reasons]))
    body.append(items("Recompile policy:", record.get("decisions", [])))
    for key, label in (("break", "Graph break"), ("eager", "Runs eagerly")):
        if record.get(key):
            b = record[key]
            body.append(f'<p class="{key}">{label} [{html.escape(b["key"])}] at '
                        f'{html.escape(where(b["file"], b["line"]))}: {html.escape(b["reason"])}</p>')
    body.append(items("Sizes specialized and equalities assumed, with the line that caused each:",
                      record.get("specializations", [])))
    body.append(pre(f'Graph ({len(record["ops"])} ops: {html.escape(", ".join(record["ops"][:12]))}'
                    f'{", ..." if len(record["ops"]) > 12 else ""})', record.get("graph"), open_=True))
    body.append(kernels(record.get("compiled")))
    body.append(pre("Guards", record.get("guards")))
    body.append(pre("Frame code", record.get("frame_code")))
    return f'<details id="{anchor}"><summary>{summary_of(record)}</summary>{"".join(body)}</details>'


def kernels(compiled: dict[str, Any] | None) -> str:
    """The Triton backend's output: each kernel, the calls it left to torch, its wrapper."""
    if not compiled:
        return ""
    if compiled["runs_with_torch"]:
        return '<p class="muted">The Triton backend ran this graph with torch.</p>'
    parts = [f'<p>{len(compiled["kernels"])} Triton kernels; calls left to torch: '
             f'{html.escape(", ".join(compiled["extern"]) or "none")}</p>']
    parts += [pre(f"kernel {i}", source) for i, source in enumerate(compiled["kernels"])]
    parts.append(pre("wrapper", compiled.get("wrapper")))
    return "".join(parts)


def render(records: list[dict[str, Any]]) -> str:
    """The whole page for `records` (from `load`)."""
    functions = by_function(records)
    anchors = {id(r): f"c{i}" for i, r in enumerate(records)}
    compiles = [r for r in records if r["event"] == "compile"]
    total = sum(r["seconds"] for r in compiles)
    recompiles = sum(1 for r in compiles if r.get("recompile_reasons"))
    breaks = sum(1 for r in compiles if r.get("break"))
    eager = sum(1 for r in records if kind(r) == "eager")
    head = (f'<h1>pdyn compile report</h1><p>{len(compiles)} compiles of {len(functions)} functions in {total:.2f} s: '
            f'{recompiles} recompiles, {breaks} graph breaks, {eager} eager decisions.</p>')
    sections = [f'<h3>{html.escape(function)}</h3>' + "".join(details_of(r, anchors[id(r)]) for r in rs)
                for function, rs in functions.items()]
    body = head + "<h2>Timeline</h2>" + (timeline(functions, records[0]["time"], anchors) if records else
                                          "<p>No compiles were recorded.</p>") + "<h2>Compiles</h2>" + "".join(sections)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>pdyn compile report</title>'
            f'<style>{STYLE}</style></head><body>{body}</body></html>\n')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pdyn.report", description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=pathlib.Path, help="the PDYN_TRACE_DIR the compiles were recorded in")
    parser.add_argument("-o", "--output", type=pathlib.Path, help="the page to write (default DIR/report.html)")
    args = parser.parse_args(argv)
    if not args.directory.is_dir():
        parser.error(f"{args.directory} is not a directory")
    records = load(args.directory)
    output = args.output or args.directory / "report.html"
    output.write_text(render(records), encoding="utf-8")
    print(f"{output}: {sum(r['event'] == 'compile' for r in records)} compiles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
