"""An SVG timeline: output records per second, batch boundaries, shaded fault windows, marks for events."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from html import escape

WIDTH, HEIGHT, PAD = 900, 240, 40
FAULT_STARTS = {"fault.inject": "fault.heal", "hold": "release"}


def timeline_svg(record_ms: Iterable[int], events: list[dict], latency: list[list[int]] | None = None) -> str:
    """Records per second as bars; committed batches as thin lines; fault windows shaded; with live
    input, the median end-to-end latency per second as a line on a scale of its own."""
    per_second = Counter(ms // 1000 for ms in record_ms if ms > 0)
    times = [e["t"] for e in events if "t" in e] + list(per_second)
    if not times:
        return "<p>No records and no events to plot.</p>"
    start, end = min(times), max(times) + 1
    span = max(end - start, 1.0)
    peak = max(per_second.values(), default=1)

    def x(t: float) -> float:
        return PAD + (t - start) / span * (WIDTH - 2 * PAD)

    def y(count: float) -> float:
        return HEIGHT - PAD - count / peak * (HEIGHT - 2 * PAD)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" class="timeline">']
    parts += _fault_windows(events, x)
    bar = max((WIDTH - 2 * PAD) / span - 1, 1)
    for second, count in sorted(per_second.items()):
        parts.append(
            f'<rect x="{x(second):.1f}" y="{y(count):.1f}" width="{bar:.1f}" height="{HEIGHT - PAD - y(count):.1f}" '
            f'fill="#4a7fb5"><title>{count} records at +{second - start:.0f} s</title></rect>'
        )
    for event in events:
        if event["type"] == "batch.committed":
            parts.append(
                f'<line x1="{x(event["t"]):.1f}" x2="{x(event["t"]):.1f}" y1="{PAD}" y2="{HEIGHT - PAD}" '
                f'stroke="#999" stroke-dasharray="2,3"><title>batch {event["batch"]} committed</title></line>'
            )
        elif event["type"] in ("trigger", "fault.inject", "recovery", "container.start", "incomplete"):
            detail = event.get("detail", event.get("reason", event.get("container", "")))
            label = escape(f"{event['type']} {detail}")
            parts.append(
                f'<circle cx="{x(event["t"]):.1f}" cy="{PAD - 10}" r="4" fill="#c0392b"><title>{label}</title></circle>'
            )
    if latency:
        worst = max(median for _, median, _ in latency) or 1
        points = " ".join(f"{x(second + 0.5):.1f},{HEIGHT - PAD - median / worst * (HEIGHT - 2 * PAD):.1f}"
                          for second, median, _ in latency)
        parts.append(f'<polyline points="{points}" fill="none" stroke="#e67e22" stroke-width="2">'
                     f'<title>median end-to-end latency per second (peak {worst} ms)</title></polyline>'
                     f'<text x="{WIDTH - PAD - 130}" y="{PAD - 2}" font-size="11" fill="#e67e22">'
                     f'latency peak {worst / 1000:.1f} s</text>')
    parts.append(
        f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{HEIGHT - PAD}" y2="{HEIGHT - PAD}" stroke="#333"/>'
        f'<text x="{PAD}" y="{HEIGHT - 12}" font-size="11">0 s</text>'
        f'<text x="{WIDTH - PAD - 30}" y="{HEIGHT - 12}" font-size="11">{span:.0f} s</text>'
        f'<text x="4" y="{PAD - 2}" font-size="11">{peak}/s</text>'
        "</svg>"
    )
    return "".join(parts)


def _fault_windows(events: list[dict], x) -> list[str]:  # type: ignore[no-untyped-def]
    shades = []
    open_at: dict[str, float] = {}
    for event in events:
        if event["type"] in FAULT_STARTS:
            open_at[str(event.get("fault", event["type"]))] = event["t"]
        elif event["type"] in FAULT_STARTS.values():
            started = open_at.pop(str(event.get("fault", "")), None)
            if started is not None:
                shades.append(
                    f'<rect x="{x(started):.1f}" y="{PAD}" width="{max(x(event["t"]) - x(started), 2):.1f}" '
                    f'height="{HEIGHT - 2 * PAD}" fill="#f5b7b1" opacity="0.6">'
                    f'<title>{escape(str(event.get("fault", "")))}</title></rect>'
                )
    return shades
