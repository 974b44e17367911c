"""``tablectl conformance PROFILE --html FILE``: the conformance evidence as one printable HTML page.

Self-contained (inline style, no script, no fetch of anything), so a lab attaches the single file to a
submission and it reads the same offline, printed or archived. Every value is escaped. The ids
(``#summary``, ``#clauses``, ``#uncovered``, ``#failed``, ``#house-choice``, ``#scenarios``) are what the
end-to-end test reads.
"""

from __future__ import annotations

import html

from controller.conformance import ConformanceReport, OptionInForce, ScenarioResult, report_to_json

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #111; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; width: 100%; margin: 0.4em 0 1em; }
th, td { border: 1px solid #bbb; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #eee; } .clause { background: #f6f6f6; font-weight: bold; }
.pass { color: #064; font-weight: bold; } .fail { color: #a00; font-weight: bold; }
.uncovered { color: #a60; font-weight: bold; } code { font-size: 0.95em; }
.muted { color: #555; } @media print { body { margin: 0.5cm; } tr { page-break-inside: avoid; } }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _result(s: ScenarioResult) -> str:
    return '<span class="pass">pass</span>' if s.passed else '<span class="fail">FAIL</span>'


def _options(options: list[OptionInForce]) -> str:
    return "<br>".join(f"<code>{_e(o.option)} = {_e(o.value)}</code>" for o in options)


def _bounds(options: list[OptionInForce]) -> str:
    return "<br>".join(f"<code>{_e(o.option)}</code>: {_e(o.bound or 'no bound (the clause leaves it to the house)')}"
                       for o in options)


def render(report: ConformanceReport) -> str:
    """The page, as text."""
    data = report_to_json(report)
    summary = data["summary"]
    rows = []
    for c in report.clauses:
        status = ('<span class="uncovered">uncovered</span>' if not c.covered else
                  ('<span class="fail">FAIL</span>' if any(not s.passed for s in c.scenarios)
                   else '<span class="pass">pass</span>'))
        scenarios = "<br>".join(f"{_result(s)} <code>{_e(s.file)}</code>" for s in c.scenarios) or "none"
        cited = "<br>".join(_e(o.citation) for o in c.options)
        rows.append(f'<tr data-clause="{_e(c.clause)}"><td class="clause">{_e(c.clause)}</td><td>{cited}</td>'
                    f"<td>{_options(c.options)}</td><td>{_bounds(c.options)}</td><td>{scenarios}</td>"
                    f"<td>{status}</td></tr>")
    uncovered = "".join(f"<li>{_e(c)}</li>" for c in report.uncovered) or "<li>none: every clause is exercised</li>"
    failed = "".join(f"<li><code>{_e(s.file)}</code>: {_e(s.detail)}</li>" for s in report.failed) or \
        "<li>none: every scenario gives what it expects</li>"
    house = "".join(f"<tr><td><code>{_e(o.option)}</code></td><td><code>{_e(o.value)}</code></td>"
                    f"<td>{_e(o.citation)}</td></tr>" for o in report.house_choice)
    played = "".join(f'<tr data-file="{_e(s.file)}"><td><code>{_e(s.file)}</code></td><td>{_e(", ".join(s.clauses))}'
                     f"</td><td>{_e(s.expects)}</td><td>{_result(s)}</td><td>{_e(s.detail)}</td>"
                     f"<td class=\"muted\">{_e(s.description)}</td></tr>" for s in report.scenarios)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Conformance evidence: {_e(report.profile)}</title>
<style>{_STYLE}</style></head>
<body>
<h1>Conformance evidence: {_e(report.profile)}</h1>
<p>{_e(report.description)}<br><span class="muted">profile file {_e(report.path)};
golden scenarios from {_e(report.scenarios_dir)}</span></p>
<table id="summary"><tr><th>clauses cited</th><th>covered by scenarios</th><th>scenarios played</th>
<th>scenarios failed</th></tr><tr><td>{summary['clauses']}</td><td>{summary['covered']}</td>
<td>{summary['scenarios']}</td><td>{summary['failed']}</td></tr></table>
<h2>Clauses</h2>
<p class="muted">Each clause the profile cites; the options that implement it with their values in force; the range
the clause allows a per-table override (outside it the scenario runner, a table config and set_limits refuse,
naming the clause); the golden scenarios that exercise it, each played when this page was written.</p>
<table id="clauses"><tr><th>clause</th><th>citation</th><th>in force</th><th>a table may set</th>
<th>scenarios</th><th>result</th></tr>
{''.join(rows)}
</table>
<h2>Uncovered clauses</h2><ul id="uncovered">{uncovered}</ul>
<h2>Failed scenarios</h2><ul id="failed">{failed}</ul>
<h2>House choices (no clause sets them)</h2>
<table id="house-choice"><tr><th>option</th><th>value</th><th>comment</th></tr>{house}</table>
<h2>Scenarios played</h2>
<table id="scenarios"><tr><th>file</th><th>clauses</th><th>expects</th><th>result</th><th>outcome</th>
<th>description</th></tr>{played}</table>
<h2>Reproduce</h2>
<p><code>tablectl conformance {_e(report.profile)} --json</code> prints the same evidence as JSON;
<code>tablectl scenario FILE.json</code> plays one scenario and prints its settlement (docs/conformance.md).</p>
</body></html>
"""
