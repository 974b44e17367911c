"""Conformance evidence: for each clause a profile cites, what is in force, what a table may change, and the
golden scenarios that show it, each played now (DESIGN.md "Conformance evidence", a contract).

A lab certifying the table asks, clause by clause: which options implement it and with what values, what range
the clause leaves a table (the bound written beside the citation in the profile, :mod:`controller.profiles`),
and which test shows it. The golden scenarios (``controller/conformance_scenarios/*.json``, package data, so an
installed package carries its own evidence) name the clauses they exercise in
``clauses``, as the profile's comments cite them (``"(l)(1)"``, or in full, ``"NY 4620.5(l)(1)"``); each
scenario of the profile is played on the engine the table uses (:func:`controller.scenario.run_scenario`) and
compared with its hand-worked ``expect``. A clause no scenario names is listed as uncovered.
:func:`build_report` gathers it; :func:`report_to_json` and :mod:`controller.conformance_html` present it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.citations import Citation, show_value
from controller.profiles import load_profile_model, resolve_profile_path
from controller.scenario import ScenarioError, decode_scenario, expect_mismatches, run_scenario


def default_scenarios_dir() -> Path:
    """The golden scenarios shipped in the package (``controller/conformance_scenarios``): the same folder in a
    checkout and in an installed package, so a lab certifies what is installed."""
    return Path(__file__).resolve().parent / "conformance_scenarios"


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    """One golden scenario played now: ``passed`` when the engine gave what the file expects."""

    file: str  # the file's name
    description: str
    clauses: tuple[str, ...]
    expects: str  # "settlement" or "refusal"
    passed: bool
    detail: str  # the refusal's text, or the settlement's net per spot, or what did not match


@dataclass(frozen=True, slots=True)
class OptionInForce:
    """A profile option under a clause: its value, the bound the clause sets a table, and the citation."""

    option: str
    value: str
    bound: str  # "fixed", "1 to 4", "at most 5", ... or "" (the clause sets no bound on a table)
    citation: str


@dataclass(slots=True)
class ClauseEvidence:
    """A clause the profile cites, the options that implement it and the scenarios that exercise it."""

    clause: str  # in full, e.g. "NY 4620.5(l)(1)"
    cited_as: str  # as the profile's comments write it, e.g. "(l)(1)"
    options: list[OptionInForce] = field(default_factory=list)
    scenarios: list[ScenarioResult] = field(default_factory=list)

    @property
    def covered(self) -> bool:
        return bool(self.scenarios)


@dataclass(slots=True)
class ConformanceReport:
    """Everything a lab attaches for one profile."""

    profile: str
    path: str
    description: str
    scenarios_dir: str
    clauses: list[ClauseEvidence]
    house_choice: list[OptionInForce]  # options no clause sets
    #: scenarios of the profile that name a clause it does not cite, and files that are no scenario at all
    unmatched: list[ScenarioResult]

    @property
    def uncovered(self) -> list[str]:
        return [c.clause for c in self.clauses if not c.covered]

    @property
    def scenarios(self) -> list[ScenarioResult]:
        """Every scenario played, once (a scenario may exercise several clauses)."""
        seen: dict[str, ScenarioResult] = {}
        for c in self.clauses:
            for s in c.scenarios:
                seen.setdefault(s.file, s)
        for s in self.unmatched:
            seen.setdefault(s.file, s)
        return sorted(seen.values(), key=lambda s: s.file)

    @property
    def failed(self) -> list[ScenarioResult]:
        return [s for s in self.scenarios if not s.passed]


def play(path: Path, data: Any) -> ScenarioResult:
    """Play one golden scenario and compare with its ``expect`` (a file that cannot be read fails, saying why)."""
    clauses = tuple(c for c in data.get("clauses", []) if isinstance(c, str)) if isinstance(data, dict) else ()
    description = str(data.get("description", "")) if isinstance(data, dict) else ""
    expect = data.get("expect") if isinstance(data, dict) else None
    if not isinstance(expect, dict) or not expect:
        return ScenarioResult(path.name, description, clauses, "?", False, "no expect: nothing to compare with")
    if "error" in expect:
        try:
            result = run_scenario(data)
        except ScenarioError as e:
            ok = str(expect["error"]) in str(e)
            return ScenarioResult(path.name, description, clauses, "refusal", ok,
                                  str(e) if ok else f"refused otherwise: {e} (expected: {expect['error']})")
        return ScenarioResult(path.name, description, clauses, "refusal", False,
                              f"played where a refusal was expected ({expect['error']}); house_net "
                              f"{result['house_net']}")
    try:
        result = run_scenario(data)
    except ScenarioError as e:
        return ScenarioResult(path.name, description, clauses, "settlement", False, f"refused: {e}")
    problems = expect_mismatches(expect, result)
    if problems:
        return ScenarioResult(path.name, description, clauses, "settlement", False, "; ".join(problems[:3]))
    nets = ", ".join(f"spot {n} {s['net']}" for n, s in sorted(result["spots"].items()))
    return ScenarioResult(path.name, description, clauses, "settlement", True,
                          f"{nets}; dealer {result['dealer']['total']}")


def _scenarios_of(profile_path: Path, directory: Path) -> tuple[list[tuple[Path, Any]], list[ScenarioResult]]:
    """The golden scenarios whose ``profile`` is this profile (by name or path), and the files of the folder
    that cannot be read as a scenario at all (failures of the evidence, whichever profile they meant)."""
    out, unreadable = [], []
    for path in sorted(directory.glob("*.json")):
        try:
            data = decode_scenario(path.read_bytes())
        except OSError as e:
            unreadable.append(ScenarioResult(path.name, "", (), "?", False, f"cannot read: {e.strerror}"))
            continue
        except ScenarioError as e:
            unreadable.append(ScenarioResult(path.name, "", (), "?", False, str(e)))
            continue
        named = data.get("profile") if isinstance(data, dict) else None
        if not isinstance(named, str):
            continue  # a malformed-input scenario (no profile): the runner's own tests, not a clause's evidence
        try:
            if resolve_profile_path(named).resolve() == profile_path.resolve():
                out.append((path, data))
        except ValueError:
            continue
    return out, unreadable


def build_report(profile: str, scenarios_dir: Path | None = None) -> ConformanceReport:
    """The evidence for ``profile`` (a name or a path; :class:`controller.profiles.ProfileError` if it does not
    load), from the golden scenarios in ``scenarios_dir``."""
    path = resolve_profile_path(profile)
    model = load_profile_model(path)
    directory = scenarios_dir or default_scenarios_dir()
    by_clause: dict[str, ClauseEvidence] = {}
    house: list[OptionInForce] = []
    prefix = model.clause_prefix
    for option, cited in model.cited().items():
        entry = _in_force(model, option, cited)
        if cited.clause is None:
            house.append(entry)
            continue
        evidence = by_clause.setdefault(cited.clause, ClauseEvidence(cited.clause, cited.clause[len(prefix):]))
        evidence.options.append(entry)
    scenarios, unmatched = _scenarios_of(path, directory)
    for file, data in scenarios:
        names = data.get("clauses")
        if names is None or names == []:
            continue  # names no clause: not evidence for one
        result = play(file, data)  # clauses of the wrong shape: the runner refuses it, so it fails here
        hit = False
        for evidence in by_clause.values():
            if isinstance(names, list) and (evidence.clause in names or evidence.cited_as in names):
                evidence.scenarios.append(result)
                hit = True
        if not hit:
            unmatched.append(result)
    return ConformanceReport(model.name, _shown(path), model.description, _shown(directory),
                             sorted(by_clause.values(), key=lambda c: c.clause), house, unmatched)


def _shown(path: Path) -> str:
    """A path as the lab typed it, relative to the working directory when inside it (the same page on any
    checkout of the same sources)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _in_force(model: Any, option: str, cited: Citation) -> OptionInForce:
    value = getattr(model, option, None)
    return OptionInForce(option, show_value(option, value), "" if cited.bound is None else cited.bound.shown(option),
                         cited.comment)


def report_to_json(report: ConformanceReport) -> dict[str, Any]:
    """The report as plain JSON values (``tablectl conformance --json``)."""

    def scenario(s: ScenarioResult) -> dict[str, Any]:
        return {"file": s.file, "expects": s.expects, "passed": s.passed, "detail": s.detail,
                "clauses": list(s.clauses), "description": s.description}

    def option(o: OptionInForce) -> dict[str, Any]:
        return {"option": o.option, "value": o.value, "bound": o.bound or None, "citation": o.citation}

    return {
        "profile": report.profile,
        "path": report.path,
        "description": report.description,
        "scenarios_dir": report.scenarios_dir,
        "clauses": [{"clause": c.clause, "cited_as": c.cited_as, "options": [option(o) for o in c.options],
                     "scenarios": [s.file for s in c.scenarios],
                     "passed": all(s.passed for s in c.scenarios) and c.covered} for c in report.clauses],
        "house_choice": [option(o) for o in report.house_choice],
        "scenarios": [scenario(s) for s in report.scenarios],
        "uncovered": report.uncovered,
        "unmatched": [s.file for s in report.unmatched],
        "failed": [s.file for s in report.failed],
        "summary": {"clauses": len(report.clauses), "covered": len(report.clauses) - len(report.uncovered),
                    "scenarios": len(report.scenarios), "failed": len(report.failed)},
    }


def report_to_text(report: ConformanceReport) -> str:
    """The report for a terminal: one block per clause, then what is uncovered or failed."""
    lines = [f"{report.profile}: {report.description} ({report.path})"]
    for c in report.clauses:
        mark = "uncovered" if not c.covered else ("FAIL" if any(not s.passed for s in c.scenarios) else "ok")
        lines.append(f"\n{c.clause}  [{mark}]")
        for o in c.options:
            bound = f"  (a table: {o.bound})" if o.bound else ""
            lines.append(f"  {o.option} = {o.value}{bound}")
        for s in c.scenarios:
            lines.append(f"  {'pass' if s.passed else 'FAIL'}  {s.file}: {s.detail}")
    if report.house_choice:
        lines.append("\nhouse choice (no clause sets them): "
                     + ", ".join(f"{o.option} = {o.value}" for o in report.house_choice))
    summary = report_to_json(report)["summary"]
    lines.append(f"\n{summary['clauses']} clauses, {summary['covered']} covered by scenarios; "
                 f"{summary['scenarios']} scenarios played, {summary['failed']} failed")
    if report.uncovered:
        lines.append("uncovered: " + "; ".join(report.uncovered))
    for s in report.failed:
        lines.append(f"failed: {s.file}: {s.detail}")
    return "\n".join(lines)


def dumps(report: ConformanceReport) -> str:
    return json.dumps(report_to_json(report), indent=1)
