"""An inline SVG bar chart with 95% confidence-interval whiskers (no JavaScript, no external files)."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from dashboards.html import Html


@dataclass(frozen=True)
class Bar:
    """One bar: its label, value, optional CI ends and the n shown under it."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None
    n: int | None = None


def bar_chart(bars: list[Bar], *, y_max: float, y_label: str, chart_id: str, width: int = 720,
              height: int = 320) -> Html:
    """Vertical bars on a 0..y_max axis; whiskers are clipped to the axis. One `rect.bar` per bar."""
    left, right, top, bottom = 48, 12, 14, 78
    plot_w, plot_h = width - left - right, height - top - bottom

    def y(v: float) -> float:
        return top + plot_h * (1 - max(0.0, min(v, y_max)) / y_max)

    parts = [(f'<svg class="chart" id="{escape(chart_id)}" role="img" xmlns="http://www.w3.org/2000/svg" '
              f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'),
             f"<title>{escape(y_label)}</title>"]
    for i in range(int(y_max) + 1):  # gridline per unit
        parts.append(f'<line class="axis" x1="{left}" x2="{width - right}" y1="{y(i):.1f}" y2="{y(i):.1f}" '
                     f'stroke-dasharray="{"" if i == 0 else "2,3"}"/>')
        parts.append(f'<text x="{left - 6}" y="{y(i) + 4:.1f}" text-anchor="end">{i}</text>')
    parts.append(f'<text x="12" y="{top + plot_h / 2:.1f}" transform="rotate(-90 12 {top + plot_h / 2:.1f})" '
                 f'text-anchor="middle">{escape(y_label)}</text>')
    slot = plot_w / max(len(bars), 1)
    bar_w = min(60.0, slot * 0.6)
    for i, bar in enumerate(bars):
        cx = left + slot * (i + 0.5)
        y_top = y(bar.value)
        parts.append(f'<rect class="bar" data-label="{escape(bar.label, quote=True)}" data-value="{bar.value:.4f}" '
                     f'x="{cx - bar_w / 2:.1f}" y="{y_top:.1f}" width="{bar_w:.1f}" '
                     f'height="{top + plot_h - y_top:.1f}"><title>{escape(bar.label)}: {bar.value:.2f}'
                     f'{"" if bar.n is None else f" (n={bar.n})"}</title></rect>')
        if bar.low is not None and bar.high is not None:
            lo, hi = y(bar.low), y(bar.high)
            parts.append(f'<g class="whisker" data-label="{escape(bar.label, quote=True)}">'
                         f'<line class="whisker" x1="{cx:.1f}" x2="{cx:.1f}" y1="{hi:.1f}" y2="{lo:.1f}"/>'
                         f'<line class="whisker" x1="{cx - 8:.1f}" x2="{cx + 8:.1f}" y1="{hi:.1f}" y2="{hi:.1f}"/>'
                         f'<line class="whisker" x1="{cx - 8:.1f}" x2="{cx + 8:.1f}" y1="{lo:.1f}" y2="{lo:.1f}"/></g>')
        has_whisker = bar.low is not None and bar.high is not None
        value_x = cx + 11 if has_whisker else cx  # beside the whisker, not on it
        parts.append(f'<text class="value" x="{value_x:.1f}" y="{y_top - 4:.1f}" '
                     f'text-anchor="{"start" if has_whisker else "middle"}">{bar.value:.2f}</text>')
        label = bar.label if len(bar.label) <= 22 else bar.label[:21] + "…"
        if len(bars) > 5:  # slanted so long category names do not overlap
            ly = top + plot_h + 14
            parts.append(f'<text x="{cx:.1f}" y="{ly}" text-anchor="end" transform="rotate(-30 {cx:.1f} {ly})">'
                         f'{escape(label)}</text>')
        else:
            parts.append(f'<text x="{cx:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{escape(label)}</text>')
        if bar.n is not None and len(bars) <= 5:
            parts.append(f'<text x="{cx:.1f}" y="{top + plot_h + 30}" text-anchor="middle">n={bar.n}</text>')
    parts.append("</svg>")
    return Html("\n".join(parts))
