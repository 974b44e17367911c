"""``tablectl report --html FILE``: a shift's analytics as one printable, self-contained HTML page.

The figures, a chart of actual against theoretical win over the period with its 2 and 3 standard
deviation bands (drawn by uPlot, the dashboard's own charting library, inlined so the file opens
anywhere, offline), each shoe's shuffle-quality score and the spots the advantage-play signals flagged.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from controller.analytics.hold import Figures, Spread, win_variance
from controller.analytics.shift import ChartPoint
from controller.game.money import format_money

VENDOR = Path(__file__).resolve().parents[1] / "web" / "vendor"
#: at most this many points in the chart (the rounds thinned evenly)
POINTS = 240


def points_chart(points: Sequence[ChartPoint], figures: Figures) -> list[dict[str, float]]:
    """(round, actual win, theoretical win, one SD of the win) after each of up to :data:`POINTS` rounds, from
    the sums after each round of the shift (:func:`controller.analytics.shift.read_shift` with ``chart``), with
    the report's own edge and sigma, rounded as its figures are: the chart shows the report's figures."""
    if not points:
        return []
    n = len(points)
    step = max(1, math.ceil(n / POINTS))
    ends = sorted({*range(step, n + 1, step), n})
    spread_ = Spread(round(figures.sigma, 6), figures.sigma_source, round(figures.covariance, 6))
    out = [{"round": 0, "actual": 0.0, "theoretical": 0.0, "sd": 0.0}]
    for end in ends:
        p = points[end - 1]
        sd = math.sqrt(win_variance(spread_, p.squares, p.pairs)) / 100  # the hands of a round covary
        out.append({"round": end, "actual": _dollars(format_money(p.house_net)),
                    "theoretical": _dollars(format_money(round(p.initial * figures.theoretical_edge))),
                    "sd": round(sd, 2)})
    return out


def _dollars(value: Any) -> float:
    return float(value) if isinstance(value, str | int | float) and value != "" else 0.0


def render(data: Mapping[str, Any], points: Sequence[Mapping[str, float]], shuffle: Mapping[str, Any],
           flagged: Sequence[Mapping[str, Any]]) -> str:
    """The page (escaped throughout: a journal's text never becomes markup)."""
    few = data.get("win_z") is None and 0 < data.get("rounds", 0) < data.get("min_rounds", 0)
    rows = "\n".join(f"<tr><th>{html.escape(str(k))}</th>"
                     f"<td>{html.escape('too few rounds' if few and k == 'win_z' else _text(v))}</td></tr>"
                     for k, v in data.items())
    shoes = shuffle.get("shoes") or []
    shoe_rows = "\n".join(
        f"<tr><td>{s.get('shoe')}</td><td>{html.escape(str(s.get('deck_set')))}</td><td>{s.get('score'):.1f}</td>"
        f"<td>{s.get('cards')}</td><td>{'passed' if s.get('passed') else '<b>FAILED</b>'}</td></tr>"
        for s in shoes) or "<tr><td colspan=5>no shoe judged in the period</td></tr>"
    flag_rows = "\n".join(
        f"<tr><td>{f.get('shoe')}</td><td>{f.get('spot')}</td><td>{html.escape(str(f.get('reason')))}</td></tr>"
        for f in flagged) or "<tr><td colspan=3>no spot flagged</td></tr>"
    script = (VENDOR / "uPlot.iife.min.js").read_text(encoding="utf-8")
    style = (VENDOR / "uPlot.min.css").read_text(encoding="utf-8")
    title = f"Table analytics: {data.get('profile')} ({data.get('journal')})"
    series = json.dumps(list(points)).replace("</", "<\\/")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{style}
body {{ font: 13px system-ui, sans-serif; margin: 2em; color: #111; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #bbb; padding: 2px 8px; text-align: left; }}
@media print {{ body {{ margin: 0.5cm; }} }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<h2>Actual against theoretical win</h2>
<div id="chart"></div>
<p>The house's actual win (solid) and its theoretical win (dashed) after each round, with the bands two and three
standard deviations of the per-round outcome either side of the theoretical win (docs/analytics.md).</p>
<h2>Figures</h2>
<table id="figures">{rows}</table>
<h2>Shuffle quality (threshold {html.escape(_text(shuffle.get("threshold")))})</h2>
<table id="shuffle"><tr><th>shoe</th><th>deck set</th><th>score</th><th>cards</th><th></th></tr>{shoe_rows}</table>
<h2>Advantage-play signals: spots flagged at shoe end</h2>
<table id="flagged"><tr><th>shoe</th><th>spot</th><th>why</th></tr>{flag_rows}</table>
<script>{script}</script>
<script>
const points = {series};
const x = points.map(p => p.round), t = points.map(p => p.theoretical);
const band = k => [points.map(p => p.theoretical - k * p.sd), points.map(p => p.theoretical + k * p.sd)];
const [lo3, hi3] = band(3), [lo2, hi2] = band(2);
new uPlot({{width: 900, height: 360, scales: {{x: {{time: false}}}},
  series: [{{label: "round"}},
    {{label: "-3 SD", stroke: "#c33", dash: [2, 4]}}, {{label: "-2 SD", stroke: "#e93", dash: [4, 4]}},
    {{label: "theoretical", stroke: "#555", dash: [8, 4]}},
    {{label: "+2 SD", stroke: "#e93", dash: [4, 4]}}, {{label: "+3 SD", stroke: "#c33", dash: [2, 4]}},
    {{label: "actual", stroke: "#06c", width: 2}}]}},
  [x, lo3, lo2, t, hi2, hi3, points.map(p => p.actual)], document.getElementById("chart"));
</script>
</body></html>
"""


def _text(value: Any) -> str:
    return "-" if value is None else str(value)
