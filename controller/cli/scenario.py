"""``tablectl scenario FILE.json``: one round from a stacked shoe, settlement on stdout as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from controller.errors import UsageError
from controller.scenario import ScenarioError, decode_scenario, run_scenario


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("scenario", help="play one round from a stacked shoe")
    p.add_argument("file", metavar="FILE.json", help="the scenario ('-' reads standard input)")
    p.add_argument("--no-events", action="store_true", help="leave the event list out of the output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    name = args.file
    try:  # bytes: decode_scenario refuses what is not UTF-8 in one line, standard input included
        raw = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as e:
        raise UsageError(f"{name}: cannot read: {e.strerror}") from None
    try:
        data = decode_scenario(raw)
    except ScenarioError as e:
        raise UsageError(f"{name}: {e}") from None
    try:
        result = run_scenario(data)
    except ScenarioError as e:
        raise UsageError(str(e)) from None
    if args.no_events:
        result.pop("events")
    print(json.dumps(result))
    return 0
