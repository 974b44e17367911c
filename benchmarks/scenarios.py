"""The golden scenario files as a benchmark that is also a test (as python-chess plays its perft files).

    python benchmarks/scenarios.py [--repeat 200] [--dir controller/conformance_scenarios] [--json]

Every ``*.json`` file under ``--dir`` (default: the package's ``controller/conformance_scenarios``) is decoded once
(:func:`controller.scenario.decode_scenario`) and played ``--repeat`` times through the scenario
runner's own API, :func:`controller.scenario.run_scenario` (``tablectl scenario`` without the process,
the file reading and the JSON printing), on whichever engine the interpreter imports (printed:
``compiled`` or ``pure``; ``TABLECTL_PURE_ENGINE=1`` in a checkout selects the pure one).

Every play is checked against the file's ``expect``, as the golden tests read it
(tests/game/test_scenarios.py): ``{"error": "text"}`` must be refused with a one-line
:class:`~controller.scenario.ScenarioError` containing the text; otherwise every field given must
match (objects by the keys given, lists element by element and of the same length, ``events`` an
ordered subsequence, the same spots), and every play of a file must give the very same settlement
as its first play (the runner is deterministic). A mismatch is printed with the file and the play,
and the script exits 1 after the figures: a benchmark that stops being right stops being a benchmark.

Prints scenarios/s per group (the files' ``profile``; refused and settled rounds counted apart) and
for all files together. Only the runner's call is timed, not the checks. Figures are printed, never
asserted (the machine's load average is printed with them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from controller.profiles import load_rules
from controller.scenario import ScenarioError, decode_scenario, run_scenario

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "controller" / "conformance_scenarios"


def mismatches(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Where ``actual`` differs from ``expected`` (a subset: objects by the keys given)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where or '.'}: expected an object, got {actual!r}"]
        out: list[str] = []
        for key, value in expected.items():
            out.extend([f"{where}.{key}: missing"] if key not in actual else mismatches(value, actual[key],
                                                                                         f"{where}.{key}"))
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: expected {expected!r}, got {actual!r}"]
        return [m for i, (e, a) in enumerate(zip(expected, actual, strict=True))
                for m in mismatches(e, a, f"{where}[{i}]")]
    if type(expected) is not type(actual) or expected != actual:
        return [f"{where}: expected {expected!r}, got {actual!r}"]
    return []


def check(expect: dict[str, Any], result: dict[str, Any]) -> list[str]:
    """What of a file's ``expect`` (a settlement) the runner's ``result`` does not match."""
    problems: list[str] = []
    for key, value in expect.items():
        if key == "events":
            pos, events = 0, result.get("events", [])
            for want in value:
                while pos < len(events) and mismatches(want, events[pos]):
                    pos += 1
                if pos == len(events):
                    problems.append(f"events: {want!r} not found in order")
                    break
                pos += 1
        elif key not in result:
            problems.append(f"{key}: missing from the output")
        else:
            problems.extend(mismatches(value, result[key], key))
    if "spots" in expect and set(expect["spots"]) != set(result.get("spots", {})):
        problems.append(f"spots: expected {sorted(expect['spots'])}, got {sorted(result.get('spots', {}))}")
    return problems


class FileRun:
    """One golden file played ``repeat`` times: its time, and whatever did not match."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data = decode_scenario(path.read_bytes())
        self.expect: dict[str, Any] = self.data["expect"]
        self.refused = "error" in self.expect
        profile = self.data.get("profile")
        self.group = profile if isinstance(profile, str) else "(no profile)"
        self.plays = 0
        self.elapsed = 0.0
        self.bad_plays = 0
        self.problems: list[str] = []  # the first few, with the play they come from
        self._first: Any = None

    def warm_up(self) -> None:
        """One play before any clock (imports, caches), checked like the others but neither timed nor counted."""
        self.play(1, label="warm-up play")
        self.plays, self.elapsed = 0, 0.0

    def play(self, repeat: int, label: str = "play") -> None:
        clock = time.perf_counter
        for i in range(repeat):
            outcome: dict[str, Any] | str
            start = clock()
            try:
                outcome = run_scenario(self.data)
            except ScenarioError as e:
                outcome = str(e)
            self.elapsed += clock() - start
            self.plays += 1
            problems = self._check(outcome)
            if problems:
                self.bad_plays += 1
                if len(self.problems) < 3:
                    self.problems.append(f"{label} {i + 1}: " + "; ".join(problems))

    def _check(self, outcome: dict[str, Any] | str) -> list[str]:
        if self.refused:
            if not isinstance(outcome, str):
                return [f"settled, expected a refusal containing {self.expect['error']!r}"]
            if "\n" in outcome or self.expect["error"] not in outcome:
                return [f"refused with {outcome!r}, expected one line containing {self.expect['error']!r}"]
            return []
        if isinstance(outcome, str):
            return [f"refused: {outcome}"]
        problems = check(self.expect, outcome)
        if self._first is None:
            self._first = outcome
        elif outcome != self._first:
            problems.append("a settlement different from the first play's")
        return problems


def profile_loading(runs: list[FileRun], repeat: int) -> float:
    """Seconds that ``repeat`` loads of each file's profile (with its overrides) take: the share of a
    play that is TOML and pydantic rather than the round (files whose profile does not load: skipped)."""
    total = 0.0
    for run in runs:
        profile, overrides = run.data.get("profile"), run.data.get("rules") or None
        try:
            load_rules(profile, overrides)
        except Exception:  # an unknown profile or a bad override: the runner refuses it, nothing to time
            continue
        start = time.perf_counter()
        for _ in range(repeat):
            load_rules(profile, overrides)
        total += time.perf_counter() - start
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=200, help="plays of each file (default 200)")
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                    help="the golden files (default: controller/conformance_scenarios)")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the text")
    args = ap.parse_args()
    import controller.game.table as table

    engine = "compiled" if (table.__file__ or "").endswith((".so", ".pyd")) else "pure"
    files = sorted(args.dir.glob("*.json"))
    if not files:
        print(f"no scenario files in {args.dir}", file=sys.stderr)
        return 2
    runs = [FileRun(p) for p in files]
    for run in runs:
        run.warm_up()
    for run in runs:
        run.play(args.repeat)

    groups: dict[str, list[FileRun]] = defaultdict(list)
    for run in runs:
        groups[run.group].append(run)
    rows = []
    for name in sorted(groups):
        members = groups[name]
        plays = sum(r.plays for r in members)
        elapsed = sum(r.elapsed for r in members)
        rows.append({
            "group": name,
            "files": len(members),
            "refused_files": sum(r.refused for r in members),
            "plays": plays,
            "scenarios_per_s": plays / elapsed if elapsed else 0.0,
        })
    plays = sum(r.plays for r in runs)
    elapsed = sum(r.elapsed for r in runs)
    settled = [r for r in runs if not r.refused]
    refused = [r for r in runs if r.refused]

    def rate(members: list[FileRun]) -> float:
        t = sum(r.elapsed for r in members)
        return sum(r.plays for r in members) / t if t else 0.0

    failures = [(r.path.name, p) for r in runs for p in r.problems]
    bad_plays = sum(r.bad_plays for r in runs)
    loading = profile_loading(runs, args.repeat)
    summary = {
        "engine": engine,
        "engine_file": table.__file__,
        "files": len(runs),
        "repeat": args.repeat,
        "plays": plays,
        "scenarios_per_s": plays / elapsed,
        "settled_per_s": rate(settled),
        "refused_per_s": rate(refused),
        "groups": rows,
        "plays_not_matching": bad_plays,
        "files_not_matching": sum(1 for r in runs if r.bad_plays),
        "profile_loading_share": loading / elapsed,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"engine: {engine} ({table.__file__}), load average {summary['load_average']}")
        print(f"{len(runs)} golden files in {args.dir}, each played {args.repeat} times, each play checked")
        print(f"  {'group (profile)':24} {'files':>5} {'refused':>7} {'plays':>8} {'scenarios/s':>12}")
        for row in rows:
            print(f"  {row['group']:24} {row['files']:5} {row['refused_files']:7} {row['plays']:8,} "
                  f"{row['scenarios_per_s']:12,.0f}")
        print(f"  {'all':24} {len(runs):5} {len(refused):7} {plays:8,} {plays / elapsed:12,.0f}")
        print(f"  settled rounds {rate(settled):,.0f}/s, refused inputs {rate(refused):,.0f}/s")
        print(f"  of which loading the profile (load_rules: TOML + pydantic, timed apart, as many loads): "
              f"{100 * loading / elapsed:.0f}%")
        print(f"plays (warm-up included) not matching their file's expect: {bad_plays} "
              f"(files: {summary['files_not_matching']})")
    for name, problem in failures:
        print(f"MISMATCH {name}: {problem}", file=sys.stderr)
    return 1 if bad_plays else 0


if __name__ == "__main__":
    sys.exit(main())
