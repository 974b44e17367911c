"""``tablectl report PATH [--since T] [--until T] [--profile NAME|PATH] [--json]``: a shift's figures.

Hold against theoretical and pace (:mod:`controller.analytics.hold`) from a table's journal: the rounds are
rebuilt from its public records (:mod:`controller.service.recall`), the rules are the ones the journal is bound to
(its last ``rules_changed`` input; ``--profile`` for a journal of before that binding). The journal is only
read. ``--since``/``--until`` take ISO times (``2026-11-24T06:00``, UTC unless an offset is given) and keep
the rounds that started within. The advantage-play signals of each shoe that ended
(:mod:`controller.analytics.advantage`) come after the figures (``advantage`` in the JSON): per shoe and
spot, the bets against the Hi-Lo count and the flag; reported, never acted on.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.analytics.shuffle_quality import THRESHOLD, ShuffleScore, shuffle_figures
from controller.cli import UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "report", help="a shift's hold against theoretical, and pace, from a table's journal",
        description="Initial wagers, theoretical and actual win, hold, how many standard deviations actual lies "
                    "from theoretical, and the pace, for the rounds of a journal; then the advantage-play signals "
                    "of each shoe that ended: each spot's bets against the Hi-Lo count, and its flag "
                    "(docs/analytics.md).")
    p.add_argument("path", metavar="PATH", help="the table's journal (a demo's is <state-dir>/<table_id>.journal)")
    p.add_argument("--since", metavar="TIME", help="only rounds started at or after TIME (ISO 8601)")
    p.add_argument("--until", metavar="TIME", help="only rounds started before TIME (ISO 8601)")
    p.add_argument("--profile", metavar="NAME|PATH",
                   help="the rules, for a journal that does not record them (written before rules were bound)")
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
    from controller.service.journal import Journal

    with Journal.open_readonly(path) as journal:
        row = journal.last_input_with("rules")
    rules = None if row is None else row.event.get("rules")
    return rules if isinstance(rules, dict) else None


def run(args: argparse.Namespace) -> int:
    from controller.analytics import advantage
    from controller.analytics.hold import NO_TOTALS, figures, totals_after
    from controller.cli.recall import _events, _InUse, _JournalLog
    from controller.game.rules import RulesFormatError, rules_from_json
    from controller.profiles import ProfileError, load_rules
    from controller.service.recall import rounds

    path = Path(args.path)
    since, until = _time(args.since, "--since"), _time(args.until, "--until")
    if since is not None and until is not None and until <= since:
        raise UsageError(f"--until {args.until} is not after --since {args.since}")
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        log = _JournalLog(path)
    except _InUse as e:
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
        baseline = NO_TOTALS
        chosen: list[dict[str, Any]] = []
        events = list(_events(log))  # read once: the rounds, then the shoes they were dealt from
        for r in rounds(events):
            if since is not None and r["started"] < since:
                baseline = totals_after(r)
                continue
            if until is not None and r["started"] >= until:
                break
            chosen.append(r)
    finally:
        log.close()
    result = figures(chosen, rules, baseline=baseline)
    data: dict[str, Any] = {"journal": str(path), "profile": rules.name, **result.to_json()}
    shift = None if since is None and until is None else [r["round"] for r in chosen]
    signals = advantage.journal_signals(events, rules, keep=shift)
    shuffles = _shuffle_scores(path, rules.decks, since, until)
    if args.json:
        print(json.dumps({**data, "shuffle": shuffle_figures(shuffles), "advantage": advantage.report_json(signals)}))
        return 0
    if args.html:
        from controller.analytics.report_html import chart_points, render

        page = render(data, chart_points(chosen, rules, baseline), shuffle_figures(shuffles),
                      advantage.flagged_json(signals))
        try:
            Path(args.html).write_text(page, encoding="utf-8")
        except OSError as e:
            raise UsageError(f"--html {args.html}: cannot write: {e.strerror}") from None
        print(f"report written to {args.html}")
        return 0
    for key, value in data.items():
        print(f"{key:>20}: {value}")
    print(f"shuffle quality (threshold {THRESHOLD:g}; {sum(not s.passed for s in shuffles)} of {len(shuffles)} "
          "judged shoes failed):")
    for score in shuffles:
        print(f"  shoe {score.shoe:>3} (deck set {score.deck_set}): score {score.score:.1f} over {score.cards} cards"
              + ("" if score.passed else "  FAILED"))
    print("\n".join(advantage.report_lines(signals)))
    return 0


def _shuffle_scores(path: Path, decks: int, since: float | None, until: float | None) -> list[ShuffleScore]:
    """Each shoe's shuffle-quality score, judged again from the journal's inputs by the table's own monitor
    (the shoes that ended within the period; every shoe the journal holds, not only the live topic's last)."""
    from controller.game.events import EventFormatError
    from controller.service.core import engine_input
    from controller.service.journal import Journal, JournalError
    from controller.service.ratings import is_engine_input
    from controller.service.shuffle_watch import ShuffleWatch

    watch = ShuffleWatch(decks)
    out: list[ShuffleScore] = []
    try:
        journal = Journal.open_readonly(path)
    except (JournalError, sqlite3.Error) as e:
        raise UsageError(f"{path}: cannot read its inputs for the shuffle scores: {e}") from None
    try:
        for row in journal.inputs_since(0):
            if not is_engine_input(row.event):  # a card reader's input or an ended rating
                continue
            score = watch.observe(engine_input(row.event))
            if score is not None and (since is None or row.ts >= since) and (until is None or row.ts < until):
                out.append(score)
    except (JournalError, EventFormatError, sqlite3.Error) as e:
        raise UsageError(f"{path}: an input the shuffle scores cannot read: {e}") from None
    finally:
        journal.close()
    return out
