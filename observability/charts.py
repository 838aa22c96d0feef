"""Server-side SVG charts for the Insights page (no JavaScript): a line of a value per
day and paired horizontal bars. Built with ``format_html`` so every label is escaped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

WIDTH, HEIGHT, PAD = 640, 200, 40


def line_chart(points: Sequence[tuple[str, float]], *, title: str) -> SafeString:
    """``points``: (label, value) in order; the first and last labels under the axis."""
    if not points:
        return format_html('<p class="help">{}</p>', "Nothing to chart.")
    top = max(value for _, value in points) or 1
    step = (WIDTH - 2 * PAD) / max(len(points) - 1, 1)
    coords = [(PAD + i * step, HEIGHT - PAD - (value / top) * (HEIGHT - 2 * PAD))
              for i, (_, value) in enumerate(points)]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    dots = format_html_join("", '<circle cx="{}" cy="{}" r="2.5"><title>{}: {}'
                            '</title></circle>',
                            ((f"{x:.1f}", f"{y:.1f}", label, _number(value))
                             for (x, y), (label, value) in zip(coords, points, strict=True)))
    return format_html(
        '<svg class="insights-chart" role="img" aria-label="{}" viewBox="0 0 {} {}" '
        'width="{}" height="{}"><title>{}</title>'
        '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#999"/>'
        '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#999"/>'
        '<text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>'
        '<text x="{}" y="{}" font-size="11" text-anchor="end">0</text>'
        '<text x="{}" y="{}" font-size="11">{}</text>'
        '<text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>'
        '<polyline fill="none" stroke="#417690" stroke-width="2" points="{}"/>'
        '<g fill="#417690">{}</g></svg>',
        title, WIDTH, HEIGHT, WIDTH, HEIGHT, title,
        PAD, PAD, PAD, HEIGHT - PAD, PAD, HEIGHT - PAD, WIDTH - PAD, HEIGHT - PAD,
        PAD - 4, PAD + 4, _number(top), PAD - 4, HEIGHT - PAD,
        PAD, HEIGHT - PAD + 16, points[0][0], WIDTH - PAD, HEIGHT - PAD + 16, points[-1][0],
        line, dots)


def bar_chart(rows: Sequence[dict[str, Any]], *, keys: tuple[str, str], title: str,
              unit: str = "s") -> SafeString:
    """Two bars a row (``keys``, e.g. p50 and p90), labelled by ``row["name"]``."""
    if not rows:
        return format_html('<p class="help">{}</p>', "Nothing to chart.")
    top = max(max(float(row[k] or 0) for k in keys) for row in rows) or 1
    label_w, bar_h = 160, 10
    height = len(rows) * (2 * bar_h + 10) + 10
    span = WIDTH - label_w - 80
    colours = ("#79aec8", "#417690")
    bars = []
    for i, row in enumerate(rows):
        y = 5 + i * (2 * bar_h + 10)
        bars.append(format_html('<text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>',
                                label_w - 6, y + bar_h + 4, row["name"]))
        for j, key in enumerate(keys):
            value = float(row[key] or 0)
            w = value / top * span
            bars.append(format_html(
                '<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{} {}: {}{}'
                '</title></rect><text x="{}" y="{}" font-size="10">{} {}{}</text>',
                label_w, y + j * bar_h, f"{w:.1f}", bar_h - 1, colours[j], row["name"], key,
                _number(value), unit, f"{label_w + w + 4:.1f}", y + j * bar_h + bar_h - 2, key,
                _number(value), unit))
    return format_html(
        '<svg class="insights-chart" role="img" aria-label="{}" viewBox="0 0 {} {}" '
        'width="{}" height="{}"><title>{}</title>{}</svg>',
        title, WIDTH, height, WIDTH, height, title, SafeString("".join(bars)))


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:g}"
