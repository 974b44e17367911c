"""``tablectl ratings PATH|--db URL [--player CARD] [--since T --until T] [--json | --html FILE]``: player ratings.

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

import argparse
import html
import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from controller.cli import UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "ratings", help="player ratings from a table's journal (per rating and per player)",
        description="The player ratings a table journaled (and those still running): time, rounds, average bet, "
                    "the industry's theoretical loss and the skill-aware one (docs/ratings.md).")
    p.add_argument("path", metavar="PATH", nargs="?", help="the table's journal (a demo's: <state-dir>/t01.journal)")
    p.add_argument("--db", metavar="URL", help="the central recorder's database instead (an SQLite path or "
                                               "postgresql://...): every table's ratings")
    p.add_argument("--player", metavar="CARD", help="only this player's ratings (the card number)")
    p.add_argument("--since", metavar="TIME", help="only ratings running at or after TIME (ISO 8601)")
    p.add_argument("--until", metavar="TIME", help="only ratings started before TIME (ISO 8601)")
    p.add_argument("--profile", metavar="NAME|PATH",
                   help="the rules, for a journal that does not record them (written before rules were bound)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON object: ratings and per-player sums")
    out.add_argument("--html", metavar="FILE", help="write the ratings as one self-contained HTML page")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from controller.cli.report import _time

    since, until = _time(args.since, "--since"), _time(args.until, "--until")
    if since is not None and until is not None and until <= since:
        raise UsageError(f"--until {args.until} is not after --since {args.since}")
    if args.db is not None:
        return _run_db(args, since, until)
    if args.path is None:
        raise UsageError("give a journal PATH (or --db URL)")
    path = Path(args.path)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if not path.is_file():
        raise UsageError(f"{path}: not a file")
    everything, unrated = journal_ratings(path, args.profile)
    ratings = [r for r in everything if _wanted(r, args.player, since, until)]
    return _output(args, {"journal": str(path)}, ratings, unrated)


def _run_db(args: argparse.Namespace, since: float | None, until: float | None) -> int:
    """``--db URL``: every table's ratings from the recorder, each with its ``table_id``."""
    from controller.cli.recorder_db import DbUnavailable, open_db
    from controller.recorder.store import StoreError, StoreUnavailable

    if args.path is not None:
        raise UsageError("give a journal PATH or --db URL, not both")
    if args.profile is not None:
        raise UsageError("--profile is for a journal that does not record its rules: the recorder holds the ratings "
                         "as the tables computed them")
    try:
        with open_db(args.db) as store:
            found = store.ratings(player=args.player, since=since, until=until)
            where = store.where
    except (DbUnavailable, StoreUnavailable) as e:
        print(f"tablectl ratings: {e}", file=sys.stderr)
        return 1
    except StoreError as e:
        raise UsageError(f"--db: {e}") from None
    ratings = [{"table_id": r.table_id, **r.body} for r in found]
    return _output(args, {"db": where}, [r for r in ratings if _wanted(r, args.player, since, until)], {})


def _output(args: argparse.Namespace, source: dict[str, str], ratings: list[dict[str, Any]],
            unrated: dict[str, dict[str, Any]]) -> int:
    players = per_player(ratings)
    try:
        return _write(args, source, ratings, players, unrated)
    except BrokenPipeError:  # `tablectl ratings ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _write(args: argparse.Namespace, source: dict[str, str], ratings: list[dict[str, Any]],
           players: dict[str, dict[str, Any]], unrated: dict[str, dict[str, Any]]) -> int:
    if args.json:
        print(json.dumps({**source, "ratings": ratings, "players": players,
                          **({"unrated": unrated} if "journal" in source else {})}))
        return 0
    if args.html:
        try:
            Path(args.html).write_text(render_html(next(iter(source.values())), ratings, players), encoding="utf-8")
        except OSError as e:
            raise UsageError(f"--html {args.html}: cannot write: {e.strerror}") from None
        print(f"ratings written to {args.html}")
        return 0
    for line in text_lines(ratings, players):
        print(line)
    if unrated and args.player is None:
        print("\nunrated play (no card in the reader), per spot, over the whole journal:")
        for spot, u in unrated.items():
            print(f"  spot {spot}: {u['rounds']} rounds, average bet {u['average_bet']}, theo {u['theoretical_loss']}, "
                  f"skill theo {u['skill_theoretical_loss']}, house net {u['house_net']}")
    return 0


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


def _wanted(rating: dict[str, Any], player: str | None, since: float | None, until: float | None) -> bool:
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
        s["departures"] += len(r.get("departures", ()))
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
                     f"{r['skill_theoretical_loss']:>10} {len(r.get('departures', ())):>4}  {_state(r)}")
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
            r["skill_theoretical_loss"], len(r.get("departures", ())), _state(r))) + "</tr>"
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
