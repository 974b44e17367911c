// The dashboard's analytics (docs/analytics.md): the pit bar, the hold-against-theoretical bar of a tile,
// and the table view's panel (the chart of actual against theoretical win with its 2 and 3 SD bands, the
// pace, the last shoes' shuffle scores and the spots flagged at shoe end), all from the tables' retained
// `analytics` messages. The chart is uPlot (npm "uplot", vendored in vendor/ as mqtt.js is: global `uPlot`).

import { h } from "./dom.js";
import { LIMIT_SD, WARN_SD, controlZone, fmtCents, fmtDuration, fmtMoney, holdVsTheo, parseMoney, tooFewRounds } from "./model.js";

// the tile's bar spans this many standard deviations either side of the theoretical win
const BAR_SD = 4;
const CHART_HEIGHT = 260;

export function pct(x, digits = 1) {
  if (typeof x !== "number" || !Number.isFinite(x)) return "\u2013";
  const text = (x * 100).toFixed(digits);
  return `${/^-0(\.0+)?$/.test(text) ? text.slice(1) : text}%`; // never "-0.0%"
}

// "+1.24 SD", "\u22120.30 SD"
export function fmtZ(z) {
  if (typeof z !== "number" || !Number.isFinite(z)) return "\u2013";
  return `${z < 0 ? "\u2212" : "+"}${Math.abs(z).toFixed(2)} SD`;
}

// A table's win_z as the screens show it: "too few rounds" below its minimum sample, else fmtZ.
export function zText(a) {
  return tooFewRounds(a) ? "too few rounds" : fmtZ(a?.win_z);
}

function num(x, digits) {
  return typeof x === "number" && Number.isFinite(x) ? x.toFixed(digits) : "\u2013";
}

function zoneCls(zone) {
  return zone === "out" ? "bad" : zone === "warn" ? "warn" : "";
}

export function fact(name, value, field, cls = "") {
  return h("div", { class: "fact" }, h("dt", { text: name }), h("dd", { class: cls, "data-field": field, text: String(value) }));
}

// ---- the pit bar -------------------------------------------------------------------------

export function pitBar(p) {
  if (!p.tables) return h("span", { class: "muted", "data-field": "pit-none", text: "Pit totals: no table has published its analytics yet." });
  return [
    h("span", { class: "pit-title", "data-field": "pit-tables", "data-count": String(p.tables),
      text: `Pit \u00b7 ${p.tables} table${p.tables === 1 ? "" : "s"}, each since it opened` }),
    h("dl", { class: "pit-facts" },
      fact("Handle", fmtCents(p.handle), "pit-handle"),
      fact("Actual win", fmtCents(p.net, true), "pit-win"),
      fact("Theoretical win", p.theoKnown ? fmtCents(p.theo, true) : "\u2013", "pit-theo"),
      fact("Hold against theoretical", `${pct(p.hold, 2)} against ${pct(p.theoHold, 2)}`, "pit-hold"),
      fact(`Outside control limits (|z| > ${LIMIT_SD})`, String(p.out), "pit-out", p.out ? "bad" : ""),
      fact(`Beyond ${WARN_SD} SD`, String(p.warn), "pit-warn", p.warn ? "warn" : ""),
    ),
  ];
}

// ---- a tile's hold against theoretical -----------------------------------------------------

// Where a z sits on the bar, in % of its width (the theoretical win in the middle).
export function barPos(z) {
  return ((Math.max(-BAR_SD, Math.min(BAR_SD, z)) + BAR_SD) / (2 * BAR_SD)) * 100;
}

// The bar: the 2 and 3 SD bands around the theoretical hold, a mark at the table's actual hold.
export function holdBar(a) {
  const v = holdVsTheo(a);
  const zone = v ? controlZone(v.z) : null;
  const band = (sd) => {
    const lo = barPos(-sd);
    return h("span", { class: `hvt-band hvt-band${sd}`, style: `left:${lo}%;width:${barPos(sd) - lo}%` });
  };
  const title = v
    ? `hold ${pct(v.hold, 2)} against a theoretical ${pct(v.theo, 2)}; the 2 SD band is \u00b1${pct(v.sd === null ? null : 2 * v.sd, 1)} of the handle; win ${zText(a)}`
    : "no analytics from this table yet";
  return h("div", { class: `hvt zone-${zone ?? "none"}`, "data-field": "hold-vs-theo", "data-zone": zone ?? "",
    "data-z": v && v.z !== null ? v.z.toFixed(3) : "", title },
    h("span", { class: "pen-label", text: "Settled", title: "hold of the settled rounds against theoretical" }),
    h("span", { class: "hvt-track" }, band(3), band(2), h("span", { class: "hvt-mid" }),
      v && v.z !== null ? h("span", { class: "hvt-mark", "data-field": "hold-mark", style: `left:${barPos(v.z).toFixed(2)}%` }) : null),
    h("span", { class: "hvt-value", "data-field": "hold-theo", text: v ? `${pct(v.hold)} / ${pct(v.theo)}` : "\u2013" }),
    h("span", { class: `hvt-z ${zoneCls(zone)}`, "data-field": "win-z", text: v ? zText(a) : "" }),
  );
}

// ---- the table view's panel --------------------------------------------------------------

export function figures(a) {
  if (!a) return h("p", { class: "muted", "data-field": "no-analytics", text: "Waiting for the table's analytics\u2026" });
  const zone = controlZone(a.win_z);
  const theoPending = a.theoretical_win === null || a.theoretical_win === undefined;
  return h("dl", { class: "facts-grid analytics-grid" },
    fact("Rounds \u00b7 hands", `${a.rounds ?? "\u2013"} \u00b7 ${a.hands ?? "\u2013"}`, "an-rounds"),
    fact("Handle (settled rounds)", fmtMoney(a.handle), "an-handle"),
    fact("Initial wagers", fmtMoney(a.initial_wagers), "an-initial"),
    fact("Theoretical win", theoPending ? "computing\u2026" : `${fmtMoney(a.theoretical_win, true)} (edge ${pct(a.theoretical_edge, 2)})`, "an-theo"),
    fact("Actual win", fmtMoney(a.house_net, true), "an-win"),
    fact("Hold", `${pct(a.hold, 2)} against ${pct(a.theoretical_hold, 2)} theoretical`, "an-hold"),
    fact("Actual \u2212 theoretical", zText(a), "an-z", zoneCls(zone)),
    fact("1 SD of the win", a.win_sd === null || a.win_sd === undefined ? "\u2013" : fmtMoney(a.win_sd), "an-sd"),
    fact("Rounds per hour", num(a.rounds_per_hour, 1), "an-rph"),
    fact("Hands per hour", num(a.hands_per_hour, 1), "an-hph"),
    fact("Mean round", typeof a.mean_round_s === "number" ? `${a.mean_round_s.toFixed(1)} s` : "\u2013", "an-mean"),
    fact("Idle", `${fmtDuration(a.idle_s)} of ${fmtDuration(a.open_s)} open`, "an-idle"),
  );
}

// A shoe the monitor failed (its alarm raised), however it says so.
function shoeFailed(s) {
  return s.alarm === true || s.failed === true || s.passed === false || s.ok === false;
}

// The last shoes' shuffle-quality scores (newest first) against the alarm threshold.
export function shuffleScores(shuffle) {
  const shoes = Array.isArray(shuffle?.shoes) ? shuffle.shoes.filter((s) => s && typeof s === "object") : [];
  const threshold = typeof shuffle?.threshold === "number" ? shuffle.threshold : null;
  const head = h("p", { class: "muted", "data-field": "shuffle-threshold",
    text: threshold === null ? "No shuffle-quality monitor reports to this table yet." : `alarm threshold ${threshold.toFixed(2)}` });
  if (!shoes.length) return [head, threshold === null ? null : h("p", { class: "muted", "data-field": "no-shoes", text: "No shoe scored yet." })];
  return [head, h("ol", { class: "shoes" }, [...shoes].reverse().map((s) => {
    const bad = shoeFailed(s);
    const id = s.shoe ?? s.id ?? s.index ?? "?";
    const score = typeof s.score === "number" ? s.score : null;
    // The bar's full width is the threshold: a score fills its share of it (2.5 of 4 fills 62.5 %), one at
    // or above it fills the bar; a score at or below 0 (less order kept than a good shuffle leaves) none.
    const width = score === null || threshold === null || threshold <= 0 ? 0 : Math.max(0, Math.min(100, (score / threshold) * 100));
    return h("li", { class: `shoe ${bad ? "bad" : "ok"}`, "data-shoe": String(id), "data-score": score === null ? "" : String(score),
      "data-alarm": bad ? "true" : "false" },
      h("span", { class: "shoe-id mono", text: `shoe ${id}` }),
      h("span", { class: "shoe-bar", title: threshold === null ? "" : `the bar's full width is the alarm threshold ${threshold.toFixed(2)}` },
        h("span", { class: "shoe-fill", "data-width": width.toFixed(1), style: `width:${width.toFixed(1)}%` }),
        threshold === null ? null : h("span", { class: "shoe-threshold" })),
      h("span", { class: "shoe-score mono", text: score === null ? "\u2013" : score.toFixed(2) }),
      h("span", { class: `badge ${bad ? "bad" : "muted"}`, text: bad ? "alarm" : "ok" }));
  }))];
}

const FLAG_SKIP = new Set(["spot", "shoe", "reason", "reasons", "signals", "message"]);

// The spots flagged at shoe end (advantage-play signals: reported, never acted on live).
export function flaggedSpots(flags) {
  const list = Array.isArray(flags) ? flags.filter((f) => f && typeof f === "object") : [];
  if (!list.length) return h("p", { class: "muted", "data-field": "no-flags", text: "No spot flagged at shoe end." });
  return h("ul", { class: "flags" }, list.map((f) => {
    const why = [f.reason, f.message, ...(Array.isArray(f.reasons) ? f.reasons : []), ...(Array.isArray(f.signals) ? f.signals : [])]
      .filter((x) => typeof x === "string" && x);
    const details = Object.entries(f).filter(([k, v]) => !FLAG_SKIP.has(k) && (typeof v === "number" || typeof v === "string" || typeof v === "boolean"))
      .map(([k, v]) => `${k.replace(/_/g, " ")} ${typeof v === "number" && !Number.isInteger(v) ? v.toFixed(2) : v}`);
    return h("li", { class: "flag", "data-spot": String(f.spot ?? ""), "data-shoe": String(f.shoe ?? "") },
      h("span", { class: "flag-spot", text: `Spot ${f.spot ?? "?"}` }),
      f.shoe !== undefined ? h("span", { class: "muted mono", text: ` shoe ${f.shoe}` }) : null,
      why.length ? h("div", { class: "flag-why", text: why.join("; ") }) : null,
      details.length ? h("div", { class: "flag-details muted", text: details.join(" \u00b7 ") }) : null);
  }));
}

// ---- the chart ---------------------------------------------------------------------------

function dollars(v) {
  const c = parseMoney(v);
  return c === null ? null : c / 100;
}

// uPlot's columns: rounds since the open; actual win; theoretical win; theoretical +/- 2 SD; +/- 3 SD.
export function chartData(series) {
  const cols = [[], [], [], [], [], [], []];
  for (const p of series) {
    const theo = dollars(p.theoretical_win);
    const sd = dollars(p.sd);
    const band = (k) => (theo === null || sd === null ? null : theo + k * sd);
    [p.round, dollars(p.house_net), theo, band(2), band(-2), band(3), band(-3)].forEach((v, i) => cols[i].push(v));
  }
  return cols;
}

function chartOptions(width) {
  const axis = { stroke: "#8d9aa5", grid: { stroke: "rgba(255,255,255,.06)" }, ticks: { stroke: "rgba(255,255,255,.12)" } };
  const edge = (label, stroke) => ({ label, stroke, width: 1, dash: [4, 4], points: { show: false } });
  return {
    width,
    height: CHART_HEIGHT,
    scales: { x: { time: false } },
    series: [
      { label: "Rounds" },
      { label: "Actual win", stroke: "#d8b45a", width: 2, points: { show: false } },
      { label: "Theoretical win", stroke: "#5aa9e6", width: 1.5, points: { show: false } },
      edge("+2 SD", "rgba(63,191,111,.7)"),
      edge("\u22122 SD", "rgba(63,191,111,.7)"),
      edge("+3 SD", "rgba(239,83,80,.7)"),
      edge("\u22123 SD", "rgba(239,83,80,.7)"),
    ],
    bands: [
      { series: [5, 6], fill: "rgba(239,83,80,.07)" },
      { series: [3, 4], fill: "rgba(63,191,111,.10)" },
    ],
    axes: [
      // whole rounds only: a chart of a few rounds drew ticks at 0.2 rounds
      { ...axis, label: "rounds since the table opened", labelSize: 20, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000],
        values: (u, splits) => splits.map((v) => (Number.isInteger(v) ? String(v) : "")) },
      { ...axis, size: 70, values: (u, splits) => splits.map((v) => fmtMoney(v)) },
    ],
    legend: { show: true, live: false },
    cursor: { drag: { x: false, y: false } },
  };
}

// One uPlot chart in `box`, kept across updates (setData) and rebuilt for another table.
export class WinChart {
  constructor(box) {
    this.box = box;
    this.plot = null;
    this.table = null;
    this.key = null;
    window.addEventListener("resize", () => this.resize());
  }

  update(table, a) {
    const series = Array.isArray(a?.series) ? a.series.filter((p) => p && typeof p === "object") : [];
    const key = JSON.stringify([table, a?.seq ?? null, series.length, a?.sigma ?? null, a?.theoretical_edge ?? null]);
    if (key === this.key) return;
    this.key = key;
    const box = this.box;
    box.dataset.points = String(series.length);
    box.dataset.table = table;
    if (!series.length) {
      this.clear();
      box.replaceChildren(h("p", { class: "muted", "data-field": "no-chart", text: "No analytics from this table yet." }));
      return;
    }
    if (typeof uPlot === "undefined") {
      box.replaceChildren(h("p", { class: "muted", text: "uPlot not loaded: the chart cannot be drawn." }));
      return;
    }
    const data = chartData(series);
    if (this.plot && this.table === table) {
      this.plot.setData(data);
    } else {
      this.clear();
      box.replaceChildren();
      this.plot = new uPlot(chartOptions(this.width()), data, box);
      this.table = table;
    }
    box.dataset.lastRound = String(series[series.length - 1].round);
  }

  width() {
    return Math.max(320, this.box.clientWidth || 640);
  }

  resize() {
    if (this.plot && this.box.clientWidth) this.plot.setSize({ width: this.width(), height: CHART_HEIGHT });
  }

  clear() {
    if (this.plot) this.plot.destroy();
    this.plot = null;
    this.table = null;
  }
}
