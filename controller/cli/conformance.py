"""``tablectl conformance PROFILE [--json | --html FILE] [--scenarios DIR]``: a lab's conformance evidence.

For every clause the profile cites: the options and values in force, the range the clause leaves a table,
and the golden scenarios that exercise it, each played now (:mod:`controller.conformance`). Exit 0 when every
scenario gives what it expects, 1 when one does not, 2 for a profile that does not load (one line).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from controller.errors import UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "conformance", help="conformance evidence of a profile: clauses, bounds, golden scenarios played now",
        description="For every clause the profile cites: the options and values in force, the range the clause "
                    "allows a per-table override, the golden scenarios that exercise it (each played now, with "
                    "its result) and the clauses no scenario covers (docs/conformance.md). Exit 1 when a "
                    "scenario fails.")
    p.add_argument("profile", metavar="PROFILE", help="a shipped profile's name or a path to a profile file")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON object")
    out.add_argument("--html", metavar="FILE", help="write a printable page (one self-contained HTML file)")
    p.add_argument("--scenarios", metavar="DIR", type=Path,
                   help="the golden scenarios to play (default: the package's own, controller/conformance_scenarios)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from controller.conformance import build_report, default_scenarios_dir, dumps, report_to_text
    from controller.profiles import ProfileError

    directory: Path = args.scenarios or default_scenarios_dir()
    if not directory.is_dir():
        raise UsageError(f"{directory}: no such folder of golden scenarios (give --scenarios DIR)")
    try:
        report = build_report(args.profile, directory)
    except ProfileError as e:
        raise UsageError(str(e)) from None
    if args.json:
        print(dumps(report))
    elif args.html:
        from controller.conformance_html import render

        try:
            Path(args.html).write_text(render(report), encoding="utf-8")
        except OSError as e:
            raise UsageError(f"{args.html}: cannot write: {e.strerror}") from None
        print(f"conformance evidence written to {args.html}")
    else:
        print(report_to_text(report))
    if report.failed:
        print(f"tablectl conformance: {len(report.failed)} scenario(s) failed: "
              + ", ".join(s.file for s in report.failed), file=sys.stderr)
        return 1
    return 0
