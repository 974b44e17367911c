"""``tablectl report PATH|--db URL [--table T | --all] [--since T] [--until T] [--profile NAME|PATH] [--detail]
[--json | --html FILE]``.

A shift's figures: hold against theoretical and pace (:mod:`controller.analytics.hold`) from a table's journal,
its public records read once as a stream (:mod:`controller.analytics.shift`: memory bounded by a shoe, not the
shift; ``benchmarks/report.py`` measures it), the rules are the ones the journal is bound to
(its last ``rules_changed`` input; ``--profile`` for a journal of before that binding). The journal is only
read. ``--since``/``--until`` take ISO times (``2026-11-24T06:00``, UTC unless an offset is given) and keep
the rounds that started within. The advantage-play signals of each shoe that ended
(:mod:`controller.analytics.advantage`) come after the figures (``advantage`` in the JSON): per shoe and
spot, the bets against the Hi-Lo count and the flag; reported, never acted on. By default a summary (a
screenful: the figures, the failed shoes, the flagged spots); ``--detail`` adds every shoe and every spot-shoe.

``--db URL``: the central recorder's database instead (:mod:`controller.recorder.floor_report`): the same
figures per table (``--table T``, or every table: ``--all``, the default), per pit and for the whole floor.
The shuffle-quality scores are judged from a table's inputs, which only its journal holds: not in this mode.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.analytics.shuffle_quality import THRESHOLD, ShuffleScore, shuffle_figures
from controller.errors import UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "report", help="a shift's hold against theoretical, and pace, from a table's journal",
        description="Initial wagers, theoretical and actual win, hold, how many standard deviations actual lies "
                    "from theoretical, and the pace, for the rounds of a journal; then the advantage-play signals "
                    "of each shoe that ended: each spot's bets against the Hi-Lo count, and its flag "
                    "(docs/analytics.md).")
    p.add_argument("path", metavar="PATH", nargs="?",
                   help="the table's journal (a demo's is <state-dir>/<table_id>.journal)")
    p.add_argument("--db", metavar="URL", help="the central recorder's database instead (an SQLite path or "
                                               "postgresql://...): per table, per pit and for the floor")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--table", metavar="T", help="with --db: only this table (t01@JOURNAL_ID: its record kept "
                                                    "from before a new journal)")
    which.add_argument("--all", action="store_true", help="with --db: every table the recorder holds (the default)")
    p.add_argument("--by", choices=["dealer"], help="each dealer's figures (across the tables they dealt at): rounds, "
                                                   "hands an hour, procedure errors, actual against theoretical win")
    p.add_argument("--since", metavar="TIME", help="only rounds started at or after TIME (ISO 8601)")
    p.add_argument("--until", metavar="TIME", help="only rounds started before TIME (ISO 8601)")
    p.add_argument("--profile", metavar="NAME|PATH",
                   help="the rules, for a journal that does not record them (written before rules were bound)")
    p.add_argument("--detail", action="store_true",
                   help="every shoe's shuffle score and every spot's signals per shoe (the default is a summary: "
                        "the figures, the failed shoes and the flagged spots); with --json, the signals too")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON object (the figures of the analytics topic)")
    out.add_argument("--html", metavar="FILE", help="write a printable report with its chart (one self-contained "
                                                    "HTML file)")
    p.set_defaults(func=run)


def _time(text: str | None, flag: str) -> float | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{flag} {text!r}: not an ISO 8601 time (e.g. 2026-11-24T06:00)") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _journal_rules(path: Path) -> dict[str, Any] | None:
    """The rules of the journal's last ``rules_changed`` input (the only input with ``rules``), or None."""
    from controller.journal import Journal

    with Journal.open_readonly(path) as journal:
        row = journal.last_input_with("rules")
    rules = None if row is None else row.event.get("rules")
    return rules if isinstance(rules, dict) else None


#: the failed shoes and flagged spots the summary lists (the rest: ``--detail``)
SUMMARY_LINES = 10


def run(args: argparse.Namespace) -> int:
    from controller.analytics import advantage
    from controller.analytics.shift import read_shift
    from controller.game.rules import RulesFormatError, rules_from_json
    from controller.profiles import ProfileError, load_rules
    from controller.reports.recall import InUse, JournalLog, events

    since, until = _time(args.since, "--since"), _time(args.until, "--until")
    if since is not None and until is not None and until <= since:
        raise UsageError(f"--until {args.until} is not after --since {args.since}")
    if args.by is not None and (args.html or args.detail):
        raise UsageError(f"--by {args.by} prints text or --json (--html and --detail are a table's report)")
    if args.db is not None:
        return _run_db(args, since, until)
    if args.path is None:
        raise UsageError("give a journal PATH (or --db URL)")
    if args.table is not None or args.all:
        raise UsageError("--table and --all go with --db (a journal PATH is one table's)")
    path = Path(args.path)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        log = JournalLog(path)
    except InUse as e:
        print(f"tablectl report: {e}")
        return 1
    try:
        if args.profile is not None:
            try:
                rules = load_rules(args.profile)
            except ProfileError as e:
                raise UsageError(str(e)) from None
        else:
            bound = _journal_rules(path)
            if bound is None:
                raise UsageError(f"{path}: the journal does not record its rules (written before they were bound): "
                                 "give --profile")
            try:
                rules = rules_from_json(bound)
            except RulesFormatError as e:
                raise UsageError(f"{path}: its rules_changed input: {e}") from None
        # one pass over the records as a stream: memory bounded by a shoe (controller/analytics/shift.py)
        shift = read_shift(events(log), rules, since=since, until=until, detail=args.detail,
                           chart=bool(args.html))
    finally:
        log.close()
    if args.by is not None:
        return _print_by_dealer(args, {"journal": str(path), "profile": rules.name, "since": since, "until": until},
                                [(path.name.removesuffix(".journal"), shift)])
    data: dict[str, Any] = {"journal": str(path), "profile": rules.name, **shift.figures.to_json()}
    shuffles = _shuffle_scores(path, rules.decks, since, until)
    adv: dict[str, Any] = {"rule": advantage.rule_json(), "shoes": shift.shoes, "spot_shoes": shift.spot_shoes,
                           "flagged": advantage.flagged_json(shift.flagged)}
    if args.detail:
        adv["signals"] = [s.to_json() for s in shift.signals]
    if args.json:
        print(json.dumps({**data, "shuffle": shuffle_figures(shuffles), "advantage": adv}))
        return 0
    if args.html:
        from controller.analytics.report_html import points_chart, render

        page = render(data, points_chart(shift.points, shift.figures), shuffle_figures(shuffles), adv["flagged"])
        try:
            Path(args.html).write_text(page, encoding="utf-8")
        except OSError as e:
            raise UsageError(f"--html {args.html}: cannot write: {e.strerror}") from None
        print(f"report written to {args.html}")
        return 0
    for key, value in data.items():
        if key == "win_z" and value is None and 0 < data["rounds"] < data["min_rounds"]:
            value = f"too few rounds (fewer than {data['min_rounds']})"
        print(f"{key:>20}: {readable(key, value)}")
    failed = [s for s in shuffles if not s.passed]
    print(f"shuffle quality (threshold {THRESHOLD:g}; {len(failed)} of {len(shuffles)} judged shoes failed"
          + (f"; scores {min(s.score for s in shuffles):.1f} to {max(s.score for s in shuffles):.1f}"
             if shuffles else "") + "):")
    listed = shuffles if args.detail else failed[:SUMMARY_LINES]
    for score in listed:
        print(f"  shoe {score.shoe:>3} (deck set {score.deck_set}): score {score.score:.1f} over {score.cards} cards"
              + ("" if score.passed else "  FAILED"))
    if not args.detail and len(failed) > len(listed):
        print(f"  ... {len(failed) - len(listed)} more failed shoes (--detail lists every shoe)")
    if args.detail:
        print("\n".join(advantage.report_lines(shift.signals)))
    else:
        lines = advantage.report_lines(shift.flagged)
        print(f"advantage play (Hi-Lo, judged at shoe end over {advantage.RULE.window} shoes; {len(shift.flagged)} "
              f"flagged of {shift.spot_shoes} spot-shoes in {shift.shoes} shoes)" + (":" if shift.flagged else ""))
        print("\n".join(lines[1:SUMMARY_LINES + 1]) if shift.flagged else "", end="\n" if shift.flagged else "")
        if len(shift.flagged) > SUMMARY_LINES:
            print(f"  ... {len(shift.flagged) - SUMMARY_LINES} more flagged (--detail lists every spot and shoe)")
        print("(each shoe's score and each spot's signals per shoe: --detail)")
    return 0


#: figures that are fractions of the handle (or of the wagers): printed as percent, as the dashboard shows them
_PERCENT = {"hold": 2, "theoretical_edge": 3, "theoretical_hold": 2}


def readable(key: str, value: Any) -> str:
    """One figure of the text report in units a person reads: times local ISO 8601, fractions in percent, rates
    and durations rounded (``--json`` keeps the exact values)."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if key in ("started", "ended"):
        return datetime.fromtimestamp(value).astimezone().isoformat(timespec="seconds")
    if key in _PERCENT:
        text = f"{value * 100:.{_PERCENT[key]}f}"
        return f"{text.removeprefix('-') if float(text) == 0 else text}%"
    if key.endswith("_per_hour"):
        return f"{value:.0f}"
    if key.endswith("_s"):
        return f"{value:.2f} s" if abs(value) < 10 else f"{value:.0f} s"
    if key.endswith("_z"):
        return f"{value:+.2f} SD"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _print_by_dealer(args: argparse.Namespace, source: dict[str, Any], shifts: list[tuple[str, Any]]) -> int:
    """``--by dealer``: each dealer's line across the tables (:mod:`controller.analytics.dealer_report`)."""
    from controller.analytics.dealer_report import by_dealer, text_lines

    report = by_dealer(shifts)
    if args.json:
        print(json.dumps({**source, "by": "dealer", **report}))
        return 0
    where = source.get("journal") or source.get("db")
    print(f"{where}: each dealer, rounds started {args.since or 'from the start'} to {args.until or 'now'}")
    print("\n".join(text_lines(report)))
    return 0


def _run_db(args: argparse.Namespace, since: float | None, until: float | None) -> int:
    """``--db URL``: every table's figures (or one's), each pit's and the floor's, from the recorder."""
    from controller.cli.recorder_db import known_table, reading
    from controller.profiles import ProfileError, load_rules
    from controller.recorder.floor_report import RulesUnknown, floor_report, table_shift

    if args.path is not None:
        raise UsageError("give a journal PATH or --db URL, not both")
    try:
        profile = load_rules(args.profile) if args.profile is not None else None
    except ProfileError as e:
        raise UsageError(str(e)) from None
    try:
        with reading(args.db) as store:
            tables = [known_table(store, args.table)] if args.table is not None else store.tables()
            where = store.where
            if args.by is not None:
                shifts = [table_shift(store, t, since=since, until=until, profile=profile) for t in tables
                          if t.last_seq > 0]
                return _print_by_dealer(args, {"db": where, "since": since, "until": until},
                                        [(s.table_id, s.shift) for s in shifts])
            report = floor_report(store, tables, since=since, until=until, profile=profile)
    except RulesUnknown as e:
        raise UsageError(str(e)) from None
    period = f"rounds started {args.since or 'from the start'} to {args.until or 'now'}"
    if args.json:
        print(json.dumps({"db": where, "since": since, "until": until, **report}))
        return 0
    if args.html:
        from controller.recorder.floor_html import render

        try:
            Path(args.html).write_text(render(report, source=where, period=period), encoding="utf-8")
        except OSError as e:
            raise UsageError(f"--html {args.html}: cannot write: {e.strerror}") from None
        print(f"floor report written to {args.html}")
        return 0
    print(f"{where}: {period}")
    header = f"{'':<16} {'tables':>6} {'rounds':>7} {'handle':>12} {'house net':>11} {'theo win':>10} {'hold':>8} " \
             f"{'win z':>7} {'rounds/h':>8}"

    def line(name: str, f: dict[str, Any], tables: object = "") -> str:
        def num(v: Any, spec: str) -> str:
            return "-" if v is None else format(v, spec)
        few = f["win_z"] is None and 0 < f["rounds"] < f["min_rounds"]  # too few rounds for a z
        return (f"{name:<16} {tables!s:>6} {f['rounds']:>7} {f['handle']:>12} {f['house_net']:>11} "
                f"{f['theoretical_win']:>10} {num(f['hold'], '.4f'):>8} {'few' if few else num(f['win_z'], '.2f'):>7} "
                f"{num(f['rounds_per_hour'], '.1f'):>8}")

    print(header)
    print(line("floor", report["floor"], report["floor"]["tables"]))
    for pit, figures in report["pits"].items():
        print(line(f"pit {pit}", figures, figures["tables"]))
    for table_id, figures in report["tables"].items():
        print(line(f"  {table_id} ({figures['pit']})", figures))
    print(f"(win z 'few': too few rounds, fewer than {report['floor']['min_rounds']}, for a z that means anything)")
    return 0


def _shuffle_scores(path: Path, decks: int, since: float | None, until: float | None) -> list[ShuffleScore]:
    """Each shoe's shuffle-quality score, judged again from the journal's inputs by the table's own monitor
    (the shoes that ended within the period; every shoe the journal holds, not only the live topic's last)."""
    from controller.game.events import EventFormatError
    from controller.journal import Journal, JournalError
    from controller.service.core import engine_input
    from controller.service.shuffle_watch import ShuffleWatch

    watch = ShuffleWatch(decks)
    out: list[ShuffleScore] = []
    try:
        journal = Journal.open_readonly(path)
    except (JournalError, sqlite3.Error) as e:
        raise UsageError(f"{path}: cannot read its inputs for the shuffle scores: {e}") from None
    try:
        wanted = watch.types
        for row in journal.inputs_since(0):
            if row.event.get("type") not in wanted:  # most inputs (bets, decisions): no event built
                continue
            score = watch.observe(engine_input(row.event))
            if score is not None and (since is None or row.ts >= since) and (until is None or row.ts < until):
                out.append(score)
    except (JournalError, EventFormatError, sqlite3.Error) as e:
        raise UsageError(f"{path}: an input the shuffle scores cannot read: {e}") from None
    finally:
        journal.close()
    return out
