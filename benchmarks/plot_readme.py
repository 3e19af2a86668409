"""The README's picture: total time of the serving benchmark (`benchmarks/models_gpu.py`) per model
and frontend, as a horizontal bar chart in SVG, written by plain Python (no plotting library).

    python benchmarks/plot_readme.py [--check]

It reads the measured table that follows the `<!-- plot_readme.py reads this table -->` marker in
docs/benchmarks.md, so the picture and the page cannot disagree; `--check` exits 1 when the
committed SVG is not what the table draws.
"""

from __future__ import annotations

import argparse
import html
import itertools
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TABLE = ROOT / "docs" / "benchmarks.md"
IMAGE = ROOT / "docs" / "img" / "models_gpu_total.svg"
MARKER = "<!-- plot_readme.py reads this table -->"
COLORS = {"pdyn": "#1f6fb4", "torch.compile": "#e07b24", "eager": "#8c8c8c"}
LABEL_W, BAR_W, BAR_H, GAP, PAD = 270, 400, 13, 3, 10


def read_table(text: str) -> list[dict[str, str]]:
    """The rows of the markdown table after MARKER (its lines up to the first other line), as
    dicts keyed by the header's names."""
    lines = text.split(MARKER, 1)[1].strip().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = itertools.takewhile(lambda line: line.startswith("|"), lines[start:])
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in table]
    header, body = rows[0], rows[2:]
    return [dict(zip(header, row)) for row in body]


def color(column: str) -> str:
    return next((c for prefix, c in COLORS.items() if column.startswith(prefix)), COLORS["eager"])


def bar(y: int, label: str, value: float, scale: float) -> list[str]:
    width = max(1.0, value * scale)
    label = html.escape(label.replace("`", ""))
    return [f'<text x="{LABEL_W - 6}" y="{y + BAR_H - 3}" text-anchor="end">{label}</text>',
            f'<rect x="{LABEL_W}" y="{y}" width="{width:.1f}" height="{BAR_H}" fill="{color(label)}"/>',
            f'<text x="{LABEL_W + width + 4:.1f}" y="{y + BAR_H - 3}">{value:.2f} s</text>']


def draw(rows: list[dict[str, str]]) -> str:
    """One group of bars per model, one bar per frontend, all on one scale (seconds)."""
    scale = BAR_W / max(float(r["total s"]) for r in rows)
    models = list(dict.fromkeys(r["model"] for r in rows))
    body, y = [], 44
    for model in models:
        body.append(f'<text x="{PAD}" y="{y + 10}" font-weight="bold">{html.escape(model)}</text>')
        y += 16
        for r in (r for r in rows if r["model"] == model):
            body += bar(y, r["column"], float(r["total s"]), scale)
            y += BAR_H + GAP
        y += 8
    title = "20 serving calls, batch 3-16 x sequence 13-124: total time, compiles included"
    note = "one H100, fp16, 6 layers x 512; benchmarks/models_gpu.py, 2026-11-24; lower is better"
    width = LABEL_W + BAR_W + 70
    head = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y + PAD}" '
            f'font-family="sans-serif" font-size="11">',
            f'<rect width="{width}" height="{y + PAD}" fill="white"/>',
            f'<text x="{PAD}" y="18" font-size="12" font-weight="bold">{html.escape(title)}</text>',
            f'<text x="{PAD}" y="34" fill="#555">{html.escape(note)}</text>']
    return "\n".join(head + body + ["</svg>"]) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed SVG")
    args = parser.parse_args()
    svg = draw(read_table(TABLE.read_text()))
    if args.check:
        same = IMAGE.exists() and IMAGE.read_text() == svg
        print("up to date" if same else f"{IMAGE} differs: run python benchmarks/plot_readme.py")
        return 0 if same else 1
    IMAGE.parent.mkdir(exist_ok=True)
    IMAGE.write_text(svg)
    print(f"wrote {IMAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
