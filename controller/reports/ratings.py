"""Player ratings from a table's journal: the report behind ``tablectl ratings`` (:mod:`controller.cli.ratings`).

From a table's journal (only read): the ratings it journaled as they ended (``rating`` inputs), and the ones
still running, rebuilt from its records and card inputs exactly as the table rebuilds them at start
(:mod:`controller.service.ratings`), each marked ``open``. Per rating: player, spots, start, minutes, rounds,
average bet, ``theoretical_loss`` and ``skill_theoretical_loss`` with the departures from basic strategy; then
per player, the sums; then the play with no card in the reader, per spot (``unrated``), over the whole
journal. ``--since``/``--until`` (ISO times, UTC unless an offset is given) keep the ratings that ran within
the period (a shift). The full card number is printed: this reads the journal, which only the
table's service user and the people who may read ratings should (docs/ratings.md).

``--db URL``: the central recorder's database instead, every table's ratings as the tables published them
(``ratings`` and ``ratings/open``; :meth:`controller.recorder.store.RecorderStore.ratings`): a player's
ratings across tables and days from one query, each with its ``table_id``. The play with no card is not
published, so it is a journal's only.
"""

from __future__ import annotations

import html
import json
import sqlite3
from pathlib import Path
from typing import Any

from controller.errors import UsageError


def journal_ratings(path: Path, profile: str | None) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every rating of the journal, oldest first: the ended ones as journaled, then the running ones rebuilt;
    and the play with no card, per spot (spot -> rounds, wagers, theo, ...), over the whole journal."""
    from controller.game.rules import Rules, RulesFormatError, rules_from_json
    from controller.journal import Journal, JournalError
    from controller.profiles import ProfileError, load_rules
    from controller.service.ratings import RATING_INPUT, TableRatings

    try:
        journal = Journal.open_readonly(path)
    except (JournalError, sqlite3.Error) as e:
        raise UsageError(f"{path}: not a table journal ({e})") from None
    try:
        ended: list[dict[str, Any]] = []
        rules_json: dict[str, Any] | None = None
        for row in journal.inputs_since(0):
            kind = row.event.get("type")
            if kind == RATING_INPUT and isinstance(row.event.get("rating"), dict):
                ended.append(row.event["rating"])
            elif kind == "rules_changed" and rules_json is None and isinstance(row.event.get("rules"), dict):
                rules_json = row.event["rules"]  # the first: the book follows each change after it
        rules: Rules
        try:
            if profile is not None:
                rules = load_rules(profile)
            elif rules_json is not None:
                rules = rules_from_json(rules_json)
            else:
                raise UsageError(f"{path}: the journal does not record its rules: give --profile")
        except (ProfileError, RulesFormatError) as e:
            raise UsageError(str(e)) from None
        table_id = str(ended[0]["rating_id"]).rsplit("-", 1)[0] if ended else path.stem
        running = TableRatings(rules, table_id=table_id)
        running.rebuild(journal)
        unrated = {str(spot): play.to_json() for spot, play in running.book.unrated().items()}
        return ended + running.open_json(), unrated
    except (JournalError, sqlite3.Error, json.JSONDecodeError) as e:
        raise UsageError(f"{path}: cannot read the journal: {e}") from None
    finally:
        journal.close()


def wanted(rating: dict[str, Any], player: str | None, since: float | None, until: float | None) -> bool:
    """Whether the rating is the player's (any, when None) and ran within ``since``-``until`` (epoch seconds)."""
    if player is not None and rating.get("player") != player:
        return False
    started = float(rating["started"])
    last = rating["ended"] if rating.get("ended") is not None else started + 60.0 * float(rating["minutes"])
    if since is not None and float(last) < since:
        return False
    return not (until is not None and started >= until)


def _cents(text: str) -> int:
    from controller.game.money import parse_money

    return parse_money(text)


def per_player(ratings: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each player's sums over the ratings: count, minutes, rounds, hands, initial wagers, losses, house net."""
    from controller.game.money import format_money

    sums: dict[str, dict[str, Any]] = {}
    for r in ratings:
        s = sums.setdefault(r["player"], {"ratings": 0, "minutes": 0.0, "rounds": 0, "hands": 0, "departures": 0,
                                          "_wagers": 0, "_theo": 0, "_skill": 0, "_net": 0})
        s["ratings"] += 1
        s["minutes"] = round(s["minutes"] + float(r["minutes"]), 2)
        s["rounds"] += int(r["rounds"])
        s["hands"] += int(r["hands"])
        s["departures"] += departures(r)
        s["_wagers"] += _cents(r["initial_wagers"])
        s["_theo"] += _cents(r["theoretical_loss"])
        s["_skill"] += _cents(r["skill_theoretical_loss"])
        s["_net"] += _cents(r["house_net"])
    out: dict[str, dict[str, Any]] = {}
    for player, s in sorted(sums.items()):
        out[player] = {
            "ratings": s["ratings"], "minutes": s["minutes"], "rounds": s["rounds"], "hands": s["hands"],
            "initial_wagers": format_money(s["_wagers"]),
            "average_bet": format_money(round(s["_wagers"] / s["hands"]) if s["hands"] else 0),
            "theoretical_loss": format_money(s["_theo"]), "skill_theoretical_loss": format_money(s["_skill"]),
            "house_net": format_money(s["_net"]), "departures": s["departures"],
        }
    return out


def departures(r: dict[str, Any]) -> int:
    """How many decisions of a rating departed: ``departures_count`` (the list holds the latest only), or the list's
    length in a rating journaled before the count was."""
    count = r.get("departures_count")
    return count if isinstance(count, int) and not isinstance(count, bool) else len(r.get("departures", ()))


def _state(r: dict[str, Any]) -> str:
    return "open" if r.get("open") else f"ended ({r.get('ended_by')})"


def text_lines(ratings: list[dict[str, Any]], players: dict[str, dict[str, Any]]) -> list[str]:
    """The terminal's view: one line a rating, then one a player."""
    if not ratings:
        return ["no ratings"]
    lines = [f"{'rating':<12} {'player':<20} {'spots':<6} {'started':<24} {'min':>7} {'rounds':>6} {'avg bet':>9} "
             f"{'theo':>9} {'skill theo':>10} {'dep':>4}  state"]
    for r in ratings:
        spots = ",".join(str(s) for s in r.get("spots") or [r["spot"]])
        lines.append(f"{r['rating_id']:<12} {r['player']:<20} {spots:<6} {r['started_at']:<24} {r['minutes']:>7.2f} "
                     f"{r['rounds']:>6} {r['average_bet']:>9} {r['theoretical_loss']:>9} "
                     f"{r['skill_theoretical_loss']:>10} {departures(r):>4}  {_state(r)}")
    lines.append("")
    lines.append(f"{'player':<20} {'ratings':>7} {'min':>8} {'rounds':>6} {'avg bet':>9} {'theo':>9} "
                 f"{'skill theo':>10} {'house net':>10}")
    for player, s in players.items():
        lines.append(f"{player:<20} {s['ratings']:>7} {s['minutes']:>8.2f} {s['rounds']:>6} {s['average_bet']:>9} "
                     f"{s['theoretical_loss']:>9} {s['skill_theoretical_loss']:>10} {s['house_net']:>10}")
    return lines


def render_html(source: str, ratings: list[dict[str, Any]], players: dict[str, dict[str, Any]]) -> str:
    """One self-contained page: the ratings, then the players' sums (every value escaped)."""
    def cell(value: object) -> str:
        return f"<td>{html.escape(str(value))}</td>"

    rating_rows = "".join(
        "<tr>" + "".join(cell(v) for v in (
            r["rating_id"], r["player"], ",".join(str(s) for s in r.get("spots") or [r["spot"]]), r["started_at"],
            r["minutes"], r["rounds"], r["average_bet"], r["max_bet"], r["house_net"], r["theoretical_loss"],
            r["skill_theoretical_loss"], departures(r), _state(r))) + "</tr>"
        for r in ratings)
    player_rows = "".join(
        "<tr>" + "".join(cell(v) for v in (
            player, s["ratings"], s["minutes"], s["rounds"], s["average_bet"], s["house_net"],
            s["theoretical_loss"], s["skill_theoretical_loss"], s["departures"])) + "</tr>"
        for player, s in players.items())
    head = "".join(f"<th>{h}</th>" for h in ("rating", "player", "spots", "started", "minutes", "rounds", "avg bet",
                                             "max bet", "house net", "theo", "skill theo", "departures", "state"))
    phead = "".join(f"<th>{h}</th>" for h in ("player", "ratings", "minutes", "rounds", "avg bet", "house net",
                                              "theo", "skill theo", "departures"))
    return ("<!doctype html><html><head><meta charset='utf-8'><title>Player ratings</title><style>"
            "body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 6px;"
            "text-align:right}</style></head><body>"
            f"<h1>Player ratings</h1><p>{html.escape(source)}</p>"
            f"<table id='ratings'><tr>{head}</tr>{rating_rows}</table>"
            f"<h2>Per player</h2><table id='players'><tr>{phead}</tr>{player_rows}</table></body></html>")
