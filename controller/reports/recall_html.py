"""Recall's printable hand history: one self-contained HTML page, a table per round, no external assets."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from typing import Any

from controller.reports.recall import dealt_text, decision_text, money, target_text, when

_CSS = """
body { font: 12px/1.35 system-ui, sans-serif; color: #111; margin: 16px; }
h1 { font-size: 18px; margin: 0 0 4px; }
h2 { font-size: 14px; margin: 18px 0 4px; }
p.meta { color: #555; margin: 0 0 8px; }
table { border-collapse: collapse; width: 100%; margin: 4px 0 6px; }
th, td { border: 1px solid #999; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #eee; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.card { font-family: ui-monospace, monospace; }
.red { color: #b00; }
.round { page-break-inside: avoid; break-inside: avoid; }
ul { margin: 2px 0 0 18px; padding: 0; }
@media print { body { margin: 0; } th { background: #eee !important; -webkit-print-color-adjust: exact;
  print-color-adjust: exact; } a { color: inherit; text-decoration: none; } }
@page { margin: 12mm; }
"""


def _card_html(c: Any) -> str:
    if c is None:
        return '<span class="card">??</span>'
    red = " red" if str(c)[-1:] in ("H", "D") else ""
    return f'<span class="card{red}">{html.escape(str(c))}</span>'


def _cards_html(cards: Any) -> str:
    return " ".join(_card_html(c) for c in cards or []) or "&ndash;"


def to_html(found: list[dict[str, Any]], *, title: str) -> str:
    """A printable hand history: one self-contained page, a table per round, no external assets."""
    e = html.escape
    parts = [f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{e(title)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{e(title)}</h1><p class=\"meta\">{len(found)} settled round{'s' if len(found) != 1 else ''}, "
             f"oldest first. Printed {e(when(datetime.now(UTC).timestamp()))}. Money in money; "
             "payouts from the player's side.</p>"]
    for r in found:
        d = r["dealer"]
        bj = " blackjack" if d.get("blackjack") else ""
        parts.append(f'<section class="round" data-round="{e(str(r["round"]))}">'
                     f"<h2>Round {e(str(r['round']))}</h2>"
                     f"<p class=\"meta\">{e(when(r['started']))} to {e(when(r['ended']))} &middot; "
                     f"seq {e(str(r['seq'][0]))}&ndash;{e(str(r['seq'][1]))} &middot; "
                     + ("" if (dealt := dealt_text(r)) is None else f"dealt by {e(dealt)} &middot; ")
                     + f"dealer {_cards_html(d['cards'])} = {e(str(d['total']))}{bj}</p>")
        parts.append("<table><thead><tr><th>Spot</th><th>Hand</th><th>Cards</th><th>Total</th><th>Wager</th>"
                     "<th>Status</th><th>Outcome</th><th>Payout</th><th>Net</th></tr></thead><tbody>")
        for n, spot in r["spots"].items():
            rows = [(str(i), _cards_html(h["cards"]), str(h["total"]), money(h["wager"]), h.get("status") or "",
                     h.get("outcome") or "", money(h.get("payout"), signed=True)) for i, h in enumerate(spot["hands"])]
            if spot.get("insurance"):
                ins = spot["insurance"]
                rows.append(("ins.", "", "", money(ins["wager"]), "", "insurance", money(ins["payout"], signed=True)))
            for k, (hand, cards, total, wager, status, outcome, payout) in enumerate(rows):
                net = (f'<td class="num" rowspan="{len(rows)}">{e(money(spot["net"], signed=True))}</td>'
                       if k == 0 else "")
                spot_cell = f'<td rowspan="{len(rows)}">{e(n)}</td>' if k == 0 else ""
                parts.append(f"<tr>{spot_cell}<td>{e(hand)}</td><td>{cards}</td><td class=\"num\">{e(total)}</td>"
                             f"<td class=\"num\">{e(wager)}</td><td>{e(status)}</td><td>{e(outcome)}</td>"
                             f"<td class=\"num\">{e(payout)}</td>{net}</tr>")
        parts.append("</tbody></table>")
        order = ", ".join(f"{_card_html(c['card'])}&rarr;{e(target_text(c))}" for c in r["cards"])
        parts.append(f"<p><b>Deal order:</b> {order or '&ndash;'}</p>")
        if r["decisions"]:
            parts.append("<p><b>Decisions:</b></p><ul>" + "".join(
                f"<li>#{e(str(dec['seq']))} {e(decision_text(dec))}</li>" for dec in r["decisions"]) + "</ul>")
        if r["alarms"]:
            parts.append("<p><b>Alarms:</b></p><ul>" + "".join(
                f"<li>#{e(str(a.get('id')))} {e(str(a.get('code')))}: {e(str(a.get('message')))}</li>"
                for a in r["alarms"]) + "</ul>")
        parts.append("</section>")
    if not found:
        parts.append("<p>No round settled.</p>")
    parts.append("</body></html>\n")
    return "".join(parts)
