"""``tablectl report --by dealer``: each dealer's figures over a shift, across the tables they dealt at.

Each table's shift (:func:`controller.analytics.shift.read_shift`, from its journal or from the recorder's record of
it) gives each dealer's sums there; a dealer's line adds them across tables as a floor adds tables
(:class:`controller.analytics.dealers.DealerLine`: each table's theoretical win at its own edge, its variance under
its own rules). The rounds no dealer was on duty for are one line, ``dealer_id`` null. The ``total`` is the tables'
own figures added the same way, so the dealers' rounds, hands, errors, wagers, handle and actual wins add up to it
exactly; their theoretical wins, each rounded to the cent per dealer and table as the table rounds its own, within
half a cent per dealer and table.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from controller.analytics.dealers import DealerLine, DealerSums
from controller.analytics.hold import Spread
from controller.analytics.shift import Shift

__all__ = ["by_dealer", "text_lines"]


def by_dealer(shifts: Iterable[tuple[str, Shift]]) -> dict[str, Any]:
    """``{"dealers": [line, ...], "total": {...}}``: the named dealers by id, then no dealer's line (JSON-ready)."""
    lines: dict[str | None, DealerLine] = {}
    total = DealerLine(None)
    for table_id, shift in shifts:
        f = shift.figures
        spread = Spread(f.sigma, f.sigma_source, f.covariance)
        table = DealerSums()
        for dealer, sums in shift.dealers.items():
            line = lines.get(dealer)
            if line is None:
                line = lines[dealer] = DealerLine(dealer)
            line.add(table_id, sums, f.theoretical_edge, spread)
            table.merge(sums)
        total.add(table_id, table, f.theoretical_edge, spread)
    order = sorted(d for d in lines if d is not None) + ([None] if None in lines else [])
    summed = total.to_json()
    del summed["dealer_id"]
    return {"dealers": [lines[d].to_json() for d in order], "total": summed}


def text_lines(report: dict[str, Any]) -> list[str]:
    """The report as a person reads it: a line per dealer, then the total."""
    head = (f"{'dealer':<20} {'tables':>6} {'rounds':>7} {'hands':>6} {'hands/h':>7} {'errors':>6} "
            f"{'initial':>11} {'actual win':>11} {'theo win':>10} {'win z':>7}  errors by code")

    def num(v: Any, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    def line(name: str, f: dict[str, Any]) -> str:
        few = f["win_z"] is None and 0 < f["rounds"] < f["min_rounds"]
        errors = f["procedure_errors"]
        return (f"{name:<20} {len(f['tables']):>6} {f['rounds']:>7} {f['hands']:>6} "
                f"{num(f['hands_per_hour'], '.0f'):>7} {sum(errors.values()):>6} {f['initial_wagers']:>11} "
                f"{f['actual_win']:>11} {f['theoretical_win'] or '-':>10} "
                f"{'few' if few else num(f['win_z'], '+.2f'):>7}  "
                + (", ".join(f"{code} {n}" for code, n in errors.items()) or "-"))

    out = [head]
    for d in report["dealers"]:
        out.append(line(d["dealer_id"] if d["dealer_id"] is not None else "no dealer on duty", d))
    out.append(line("total", report["total"]))
    out.append(f"(win z 'few': too few rounds, fewer than {report['total']['min_rounds']}, for a z that means "
               "anything; hands/h over each dealer's time on duty)")
    return out
