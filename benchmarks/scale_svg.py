"""A hand-written SVG of a `scale.py` sweep: reaction latency (p50, p99) and manager RSS against the number
of cached objects, two panels side by side, no plotting library.

    .venv/bin/python benchmarks/scale_svg.py SWEEP.json OUT.svg     (re-plot a saved `scale.py --json`)
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

WIDTH, HEIGHT = 360, 260  # one panel
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 40, 50
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#7f7f7f")


def _nice_max(value: float) -> float:
    """The smallest round number >= value (a step below times a power of ten)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** (len(str(int(value))) - 1) if value >= 1 else 0.1
    while power > value:
        power /= 10
    for step in (1, 1.2, 1.6, 2, 2.4, 4, 6, 8, 10):  # each splits into 4 round ticks
        if step * power >= value:
            return step * power
    return 10 * power


def _panel(
    x0: int, title: str, y_label: str, xs: Sequence[float], series: Sequence[tuple[str, Sequence[float]]],
    target: float | None,
) -> list[str]:  # fmt: skip
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    x_max = _nice_max(max(xs))
    y_max = _nice_max(max([*(v for _, values in series for v in values), target or 0]) * 1.1)

    def px(x: float) -> float:
        return x0 + LEFT + plot_w * x / x_max

    def py(y: float) -> float:
        return TOP + plot_h * (1 - y / y_max)

    out = [
        f'<text x="{x0 + WIDTH / 2}" y="20" text-anchor="middle" font-weight="bold">{title}</text>',
        f'<rect x="{x0 + LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>',
        f'<text x="{x0 + LEFT + plot_w / 2}" y="{HEIGHT - 10}" text-anchor="middle">'
        "cached objects (pods + Jobs + ReplicaSets)</text>",
        f'<text transform="translate({x0 + 14},{TOP + plot_h / 2}) rotate(-90)" text-anchor="middle">'
        f"{y_label}</text>",
    ]
    for i in range(5):
        xv, yv = x_max * i / 4, y_max * i / 4
        out.append(
            f'<text x="{px(xv):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{xv / 1000:g}k</text>'
        )
        out.append(f'<text x="{x0 + LEFT - 6}" y="{py(yv) + 4:.1f}" text-anchor="end">{yv:g}</text>')
        out.append(
            f'<line x1="{x0 + LEFT}" y1="{py(yv):.1f}" x2="{x0 + LEFT + plot_w}" y2="{py(yv):.1f}" '
            'stroke="#ddd"/>'
        )
    if target is not None:
        out.append(
            f'<line x1="{x0 + LEFT}" y1="{py(target):.1f}" x2="{x0 + LEFT + plot_w}" y2="{py(target):.1f}" '
            'stroke="#999" stroke-dasharray="4 3"/>'
        )
        out.append(
            f'<text x="{x0 + LEFT + plot_w - 4}" y="{py(target) - 4:.1f}" text-anchor="end" fill="#777">'
            "target</text>"
        )
    for n, (name, values) in enumerate(series):
        colour = COLOURS[n % len(COLOURS)]
        points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, values, strict=True))
        out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out.extend(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>'
            for x, y in zip(xs, values, strict=True)
        )
        out.append(f'<text x="{x0 + LEFT + 8}" y="{TOP + 16 + 16 * n}" fill="{colour}">{name}</text>')
    return out


def write_svg(path: str, rows: Sequence[dict[str, Any]]) -> None:
    """Two panels from `scale.py` rows: latency (p50 and p99 of both write kinds) and RSS (the manager's,
    the bare stripped dicts', and the target 1.3 x dicts + the empty-cluster baseline)."""
    rows = sorted(rows, key=lambda r: r["objects"])
    xs = [float(r["objects"]) for r in rows]
    mb = 1024 * 1024
    latency = _panel(
        0, "Reaction latency (write → controller's pod)", "ms", xs,
        [("p50", [r["p50_ms"] for r in rows]), ("p99", [r["p99_ms"] for r in rows])], 50.0,
    )  # fmt: skip
    memory = _panel(
        WIDTH, "Manager memory", "MB", xs,
        [
            ("manager RSS", [r["rss"] / mb for r in rows]),
            ("bare stripped dicts", [r["dicts_bytes"] / mb for r in rows]),
            ("target: 1.3 x dicts + baseline", [(1.3 * r["dicts_bytes"] + r["base_rss"]) / mb for r in rows]),
        ],
        None,
    )  # fmt: skip
    body = "\n".join([*latency, *memory])
    with open(path, "w") as f:
        f.write(
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * WIDTH}" height="{HEIGHT}" '
            f'font-family="sans-serif" font-size="11">\n<rect width="100%" height="100%" fill="white"/>\n'
            f"{body}\n</svg>\n"
        )


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        write_svg(sys.argv[2], json.load(f))
