// The floor page (#floor): the floor's totals, the tables outside their control limits, the dealers outside theirs
// and the slowest paces (dealers.js), then each pit with its totals and one row per table (hold against
// theoretical, win_z), the tables outside their limits first.
//
// Drawn at most once an animation frame (app.js batches the messages), and then only what changed: each row,
// pit header and total is rebuilt when what it shows differs (dom.js renderIfChanged), and rows are moved, never
// recreated, when the order changes. A `state` (many a second on a busy floor) that changes no figure of the
// page touches no element. Each draw is measured with the User Timing API ("floor-render" in the browser's
// performance tools; the last one is kept).

import { LIMIT_SD, WARN_SD, fmtCents, fmtMoney } from "./model.js";
import { fact, fmtZ, holdBar, pct, zText } from "./analytics.js";
import { UNASSIGNED, floorModel } from "./floor_model.js";
import { h, renderIfChanged } from "./dom.js";
import { recorderSummary, seqText } from "./recorder_model.js";
import { floorDealers } from "./dealer_model.js";
import { floorDealersEl } from "./dealers.js";

// the rows' columns; true: a figure, aligned right
const COLUMNS = [["Table", false], ["Status", false], ["Rounds", true], ["Handle", true], ["Actual win", true],
  ["Theoretical win", true], ["Hold", true], ["Theoretical hold", true], ["win_z", true], ["Hold against theoretical", false]];

function zoneCls(zone) {
  return zone === "out" ? "bad" : zone === "warn" ? "warn" : "";
}

// Handle, actual and theoretical win, hold against theoretical and the counts beyond the limits, of pitTotals().
function totalsFacts(tt) {
  return h("dl", { class: "pit-facts" },
    fact("Handle", tt.tables ? fmtCents(tt.handle) : "\u2013", "handle"),
    fact("Actual win", tt.tables ? fmtCents(tt.net, true) : "\u2013", "win"),
    fact("Theoretical win", tt.theoKnown ? fmtCents(tt.theo, true) : "\u2013", "theo"),
    fact("Hold against theoretical", tt.tables ? `${pct(tt.hold, 2)} against ${pct(tt.theoHold, 2)}` : "\u2013", "hold"),
    fact(`Outside control limits (|z| > ${LIMIT_SD})`, String(tt.out), "out", tt.out ? "bad" : ""),
    fact(`Beyond ${WARN_SD} SD`, String(tt.warn), "warn", tt.warn ? "warn" : ""),
  );
}

// The recorder's status in the floor totals: no recorder seen / no alarms / N alarms, and what it holds.
function recorderFact(r) {
  const text = r.status === "unseen" ? "no recorder seen" : r.status === "ok" ? "no alarms"
    : `${r.alarms.length} alarm${r.alarms.length === 1 ? "" : "s"}`;
  const cls = r.status === "alarms" ? "bad" : r.status === "unseen" ? "warn" : "";
  const held = r.tables ? `${r.tables} table${r.tables === 1 ? "" : "s"} recorded` +
    (r.lastTs === null ? "" : `, last at ${new Date(r.lastTs * 1000).toLocaleTimeString("en-GB")}`) : "";
  return h("div", { class: "fact", "data-field": "recorder", "data-status": r.status },
    h("dt", { text: "Recorder" }),
    h("dd", { class: cls, "data-field": "recorder-status", text }),
    held ? h("dd", { class: "muted", "data-field": "recorder-held", "data-count": String(r.tables), text: held }) : null);
}

// The band at the top of the page: each of the recorder's gaps and conflicts, naming its table and seqs.
function recorderBand(r) {
  const n = r.alarms.length;
  return [
    h("h2", { text: `Recorder: ${n} alarm${n === 1 ? "" : "s"}, the floor's record is incomplete or disputed` }),
    h("ul", { class: "floor-recorder-list" }, r.alarms.map((a) => h("li", {
      "data-table": a.table, "data-code": a.code, "data-from": String(a.from), "data-to": String(a.to) },
      tableLink(a.table),
      h("span", { class: "badge bad", "data-field": "code", text: a.code === "recorder_gap" ? "gap" : a.code === "recorder_conflict" ? "conflict" : a.code }),
      h("span", { "data-field": "seqs", text: seqText(a.from, a.to) }),
      h("span", { class: "muted", "data-field": "message", text: a.message })))),
  ];
}

function floorTotals(m, rec) {
  const pits = m.pits.length;
  return [
    h("span", { class: "pit-title", "data-field": "floor-tables", "data-count": String(m.tables),
      text: `Floor \u00b7 ${m.tables} table${m.tables === 1 ? "" : "s"} in ${pits} pit${pits === 1 ? "" : "s"}, each since it opened` }),
    h("span", { class: "muted", "data-field": "floor-live", "data-count": String(m.live), text: `${m.live} live` }),
    totalsFacts(m.totals),
    recorderFact(rec),
  ];
}

function tableLink(id) {
  return h("a", { class: "floor-id", href: `#/${encodeURIComponent(id)}`, text: id });
}

// The tables outside their control limits, all pits together, the farthest out first.
function outList(m) {
  const title = h("h2", { text: `Outside their control limits (|win_z| > ${m.limit})` });
  if (!m.out.length) return [title, h("p", { class: "muted", "data-field": "no-out", text: "No table is outside its control limits." })];
  return [title, h("ol", { class: "floor-out-list" }, m.out.map((r) => h("li", { "data-table": r.id, "data-pit": r.pit ?? "" },
    tableLink(r.id),
    h("span", { class: "muted", "data-field": "pit", text: r.pit ?? UNASSIGNED }),
    h("span", { class: "bad", "data-field": "win-z", text: fmtZ(r.z) }),
    h("span", { "data-field": "hold", text: `hold ${pct(r.hold, 2)} against ${pct(r.theoHold, 2)}` }))))];
}

function pitHead(p) {
  return [
    h("h2", { class: "floor-pit-name", "data-field": "pit-name", text: p.name }),
    h("span", { class: "muted", "data-field": "pit-count", "data-count": String(p.count),
      text: `${p.count} table${p.count === 1 ? "" : "s"} \u00b7 ${p.live} live` }),
    totalsFacts(p.totals),
  ];
}

function statusText(r) {
  if (r.status === "offline") return "OFFLINE";
  return r.stale ? "STALE" : r.status.toUpperCase();
}

// The build a table runs (its digest's first 12 hex digits, the whole on hover), marked when it differs from the
// floor's most common build or is unverified.
function buildCell(r) {
  if (!r.software) return null;
  const text = r.build ? r.build.slice(0, 12) : "unverified";
  const title = `${r.version ?? "unknown version"}: ${r.build ?? "no build digest (unverified or not matching)"}`;
  const cls = r.buildMark === "differs" ? "badge bad" : r.buildMark === "unverified" ? "badge warn" : "muted";
  return h("span", { class: `floor-build ${cls}`, "data-field": "build", "data-mark": r.buildMark ?? "", title,
    text: r.buildMark === "differs" ? `build ${text} differs` : `build ${text}` });
}

function rowCells(r) {
  const none = "\u2013";
  return [
    h("td", {}, tableLink(r.id), r.zone === "out" ? h("span", { class: "badge bad", "data-field": "out", text: "outside limits" }) : null,
      buildCell(r)),
    h("td", {}, h("span", { class: `badge status-${r.stale && r.status !== "offline" ? "stale" : r.status}`, "data-field": "status", text: statusText(r) })),
    h("td", { class: "num", "data-field": "rounds", text: r.rounds === null ? none : String(r.rounds) }),
    h("td", { class: "num", "data-field": "handle", text: r.handle === null ? none : fmtMoney(r.handle) }),
    h("td", { class: "num", "data-field": "win", text: r.net === null ? none : fmtMoney(r.net, true) }),
    h("td", { class: "num", "data-field": "theo", text: r.theo === null ? none : fmtMoney(r.theo, true) }),
    h("td", { class: "num", "data-field": "hold", text: pct(r.hold, 2) }),
    h("td", { class: "num", "data-field": "theo-hold", text: pct(r.theoHold, 2) }),
    h("td", { class: `num ${zoneCls(r.zone)}`, "data-field": "win-z", text: zText(r.bar) }),
    h("td", { class: "floor-bar" }, holdBar(r.bar)),
  ];
}

// Write a data attribute only when it differs: an unchanged row is not touched at all.
function setData(el, key, value) {
  if (el.dataset[key] !== value) el.dataset[key] = value;
}

export class FloorView {
  constructor(root) {
    this.root = root;
    this.totals = root.querySelector("#floor-totals");
    this.out = root.querySelector("#floor-out");
    this.pitsBox = root.querySelector("#floor-pits");
    this.empty = root.querySelector("#floor-empty");
    this.recorderBox = root.querySelector("#floor-recorder");
    this.dealersBox = root.querySelector("#floor-dealers");
    this.dealerInputs = null; // each table's `analytics` at the last combination of its dealers
    this.sections = new Map(); // pit (null: unassigned) -> {el, head, body}
    this.rows = new Map(); // table id -> <tr>
  }

  // `recorder`: the central recorder's alarms and positions (recorder_model.js RecorderRecord)
  render(pit, now, staleMs, recorder) {
    const t0 = performance.now();
    const m = floorModel(pit, now, staleMs);
    const rec = recorderSummary(recorder);
    setData(this.root, "recorder", rec.status);
    this.recorderBox.hidden = rec.alarms.length === 0;
    renderIfChanged(this.recorderBox, JSON.stringify(rec.alarms), () => (rec.alarms.length ? recorderBand(rec) : []));
    setData(this.root, "tables", String(m.tables));
    setData(this.root, "out", String(m.out.length));
    setData(this.root, "builds", String(m.builds));
    this.empty.hidden = m.tables > 0;
    renderIfChanged(this.totals, JSON.stringify([m.tables, m.live, m.pits.length, m.totals, rec.status, rec.alarms.length, rec.tables, rec.lastTs]),
      () => floorTotals(m, rec));
    renderIfChanged(this.out, JSON.stringify(m.out.map((r) => [r.id, r.pit, r.z, r.hold, r.theoHold])), () => outList(m));
    this.renderDealers(pit);

    const seenPits = new Set();
    m.pits.forEach((p, i) => {
      seenPits.add(p.pit);
      const sec = this.section(p.pit);
      setData(sec.el, "out", String(p.totals.out));
      renderIfChanged(sec.head, JSON.stringify([p.name, p.count, p.live, p.totals]), () => pitHead(p));
      if (this.pitsBox.children[i] !== sec.el) this.pitsBox.insertBefore(sec.el, this.pitsBox.children[i] ?? null);
      p.rows.forEach((r, j) => {
        const tr = this.row(r);
        if (sec.body.children[j] !== tr) sec.body.insertBefore(tr, sec.body.children[j] ?? null);
      });
    });
    // what is left: pits no table names any more, rows of tables gone
    for (const [key, sec] of this.sections) {
      if (!seenPits.has(key)) {
        sec.el.remove();
        this.sections.delete(key);
      }
    }
    for (const p of m.pits) {
      const body = this.sections.get(p.pit).body;
      while (body.children.length > p.rows.length) {
        const extra = body.lastElementChild;
        this.rows.delete(extra.dataset.table);
        extra.remove();
      }
    }
    performance.measure("floor-render", { start: t0 });
    performance.clearMeasures("floor-render");
  }

  // The dealers across the tables (dealer_model.js floorDealers), combined again only when a table's `analytics`
  // is another message than at the last draw (a `state`, many a second, costs a pass over the tables), and redrawn
  // only when what the lists show changed.
  renderDealers(pit) {
    const inputs = [...pit.tables.values()].map((t) => t.analytics);
    const last = this.dealerInputs;
    if (last && last.length === inputs.length && inputs.every((a, i) => a === last[i])) return;
    this.dealerInputs = inputs;
    const dealers = floorDealers(pit.tables.values());
    setData(this.root, "dealersOut", String(dealers.out.length));
    renderIfChanged(this.dealersBox, JSON.stringify(dealers), () => floorDealersEl(dealers));
  }

  section(key) {
    let sec = this.sections.get(key);
    if (!sec) {
      const head = h("header", { class: "floor-pit-head" });
      const body = h("tbody");
      const el = h("section", { class: "floor-pit panel", "data-pit": key ?? "", "aria-label": `Pit ${key ?? UNASSIGNED}` },
        head, h("table", { class: "floor-table" }, h("thead", {}, h("tr", {}, COLUMNS.map(([c, num]) => h("th", { class: num ? "num" : null, text: c })))), body));
      sec = { el, head, body };
      this.sections.set(key, sec);
    }
    return sec;
  }

  // The table's row, rebuilt only when what it shows changed.
  row(r) {
    let tr = this.rows.get(r.id);
    if (!tr) {
      tr = h("tr", { "data-table": r.id });
      this.rows.set(r.id, tr);
    }
    const cls = [r.zone === "out" ? "is-out" : "", r.stale ? "is-stale" : ""].filter(Boolean).join(" ");
    if (tr.className !== cls) tr.className = cls;
    setData(tr, "zone", r.zone ?? "");
    setData(tr, "pit", r.pit ?? "");
    setData(tr, "status", r.status);
    setData(tr, "build", r.buildMark ?? "");
    renderIfChanged(tr, JSON.stringify(r), () => rowCells(r));
    return tr;
  }
}
