"""``tablectl ratings PATH|--db URL [--player CARD] [--since T --until T] [--json | --html FILE]``: player ratings
(:mod:`controller.reports.ratings` reads and renders them; ``--db``: the central recorder's, every table's)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from controller.errors import UsageError
from controller.reports.ratings import journal_ratings, per_player, render_html, text_lines, wanted


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
    ratings = [r for r in everything if wanted(r, args.player, since, until)]
    return _output(args, {"journal": str(path)}, ratings, unrated)


def _run_db(args: argparse.Namespace, since: float | None, until: float | None) -> int:
    """``--db URL``: every table's ratings from the recorder, each with its ``table_id``."""
    from controller.cli.recorder_db import reading

    if args.path is not None:
        raise UsageError("give a journal PATH or --db URL, not both")
    if args.profile is not None:
        raise UsageError("--profile is for a journal that does not record its rules: the recorder holds the ratings "
                         "as the tables computed them")
    with reading(args.db) as store:
        found = store.ratings(player=args.player, since=since, until=until)
        where = store.where
    ratings = [{"table_id": r.table_id, **r.body} for r in found]
    return _output(args, {"db": where}, [r for r in ratings if wanted(r, args.player, since, until)], {})


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
