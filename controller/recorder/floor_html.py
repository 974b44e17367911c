"""``tablectl report --db URL --html FILE``: the floor's figures as one printable, self-contained HTML page: the
floor, each pit, then each table (pit by pit), every value escaped."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

_COLUMNS = (("rounds", "rounds"), ("hands", "hands"), ("handle", "handle"), ("house_net", "house net"),
            ("initial_wagers", "initial wagers"), ("theoretical_win", "theo win"), ("hold", "hold"),
            ("win_z", "win z"), ("rounds_per_hour", "rounds/h"), ("flagged", "flagged spots"))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        value = f"{value:.4f}"
    elif isinstance(value, list):
        value = len(value)
    return f"<td>{html.escape('-' if value is None else str(value))}</td>"


def _row(name: str, figures: Mapping[str, Any], extra: str = "") -> str:
    few = figures.get("win_z") is None and 0 < figures["rounds"] < figures["min_rounds"]
    return (f"<tr><th>{html.escape(name)}</th>{extra}"
            + "".join(_cell("too few rounds" if few and k == "win_z" else figures.get(k)) for k, _ in _COLUMNS)
            + "</tr>")


def render(report: Mapping[str, Any], *, source: str, period: str) -> str:
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label in _COLUMNS)
    pits = "".join(_row(pit, figures, _cell(figures["tables"])) for pit, figures in report["pits"].items())
    tables = "".join(_row(t, figures, _cell(figures["pit"]) + _cell(figures["profile"]))
                     for t, figures in sorted(report["tables"].items(), key=lambda kv: (kv[1]["pit"], kv[0])))
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Floor report</title><style>"
            "body{font:12px/1.35 system-ui,sans-serif;margin:16px}table{border-collapse:collapse;margin:4px 0 12px}"
            "td,th{border:1px solid #999;padding:2px 6px;text-align:right}th{background:#eee}</style></head><body>"
            f"<h1>Floor report</h1><p>{html.escape(source)}; {html.escape(period)}</p>"
            f"<h2>Floor</h2><table id='floor'><tr><th></th><th>tables</th>{head}</tr>"
            f"{_row('floor', report['floor'], _cell(report['floor']['tables']))}</table>"
            f"<h2>Pits</h2><table id='pits'><tr><th>pit</th><th>tables</th>{head}</tr>{pits}</table>"
            f"<h2>Tables</h2><table id='tables'><tr><th>table</th><th>pit</th><th>profile</th>{head}</tr>{tables}"
            "</table></body></html>\n")
