// The dealer on screen (DESIGN.md, "The dealer on duty"): who deals at a tile and in the table view, each
// dealer's figures in the table view's analytics, who dealt each round of its history, and the floor page's
// dealers outside their control limits and slowest paces. Only elements here (dom.js h: a dealer id, which comes
// from outside, is only ever text or an attribute's value); the figures come from dealer_model.js.

import { h } from "./dom.js";
import { LIMIT_SD, fmtMinutes, fmtMoney, fmtCents } from "./model.js";
import { fmtZ, zText } from "./analytics.js";
import { roundDealer } from "./dealer_model.js";

const DASH = "\u2013";

function zoneCls(zone) {
  return zone === "out" ? "bad" : zone === "warn" ? "warn" : "";
}

function label(s) {
  return String(s).replace(/_/g, " ");
}

function count(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

// Whole minutes a dealer has been on duty (what a screen shows and keys its redraw on), or null.
export function dutyMinutes(duty) {
  return duty && duty.ageS !== null ? Math.floor(duty.ageS / 60) : null;
}

// Who deals: "Dealer d.ames · 12 min", or "no dealer" (and, at a table that needs one, that betting waits).
// `duty`: dealer_model.js dealerOnDuty; `waits`: waitsForDealer.
export function dutyEl(duty, waits, name = "Dealer") {
  if (!duty) {
    return h("div", { class: "duty no-dealer", "data-field": "dealer-on-duty", "data-dealer": "" },
      h("span", { class: waits ? "warn" : "muted", "data-field": "no-dealer", text: "no dealer" }),
      waits ? h("span", { class: "warn", "data-field": "dealer-wait", text: " \u00b7 betting waits for a dealer" }) : null);
  }
  const minutes = dutyMinutes(duty);
  return h("div", { class: "duty", "data-field": "dealer-on-duty", "data-dealer": duty.id },
    h("span", { class: "muted", text: `${name} ` }),
    h("span", { class: "duty-id mono", "data-field": "dealer-id", text: duty.id }),
    minutes === null ? null : h("span", { class: "muted", "data-field": "dealer-minutes", "data-minutes": String(minutes),
      title: "minutes since this dealer signed in or relieved the last", text: ` \u00b7 ${fmtMinutes(duty.ageS)}` }));
}

// "peek mismatch 2, card out of turn 1", or "none".
function errorsText(pairs) {
  return pairs.length ? pairs.map(([code, n]) => `${label(code)} ${n}`).join(", ") : "none";
}

const pace = (hph) => (hph === null ? DASH : hph.toFixed(1));

// The table view's per-dealer figures (`analytics.dealers`): one row a dealer, win_z in the table's zones.
// `rows`: dealer_model.js dealerRows.
export function dealerFigures(a, rows) {
  if (!a) return null;
  if (!rows.length) return h("p", { class: "muted", "data-field": "no-dealers", text: "No round dealt by a signed-in dealer yet." });
  return h("table", { class: "lr-table dealer-table" },
    h("thead", {}, h("tr", {}, ["Dealer", "Rounds", "Hands an hour", "Procedure errors", "Actual win", "Theoretical win",
      "Actual \u2212 theoretical"].map((x, i) => h("th", { class: i && i !== 3 ? "num" : null, text: x })))),
    h("tbody", {}, rows.map((r) => h("tr", { "data-dealer": r.id, "data-zone": r.zone ?? "" },
      h("td", { class: "mono", "data-field": "dealer", text: r.id }),
      h("td", { class: "num", "data-field": "rounds", text: r.rounds === null ? DASH : String(r.rounds) }),
      h("td", { class: "num", "data-field": "hph", text: pace(r.hph) }),
      h("td", { class: r.errors.total ? "warn" : "muted", "data-field": "errors", "data-count": String(r.errors.total),
        text: errorsText(r.errors.pairs) }),
      h("td", { class: "num", "data-field": "win", text: r.actual === null ? DASH : fmtMoney(r.actual, true) }),
      h("td", { class: "num", "data-field": "theo", text: r.theo === null ? DASH : fmtMoney(r.theo, true) }),
      h("td", { class: `num ${zoneCls(r.zone)}`, "data-field": "win-z", text: zText(r.z) })))));
}

// A history row's cell of who dealt the round: its dealer of record, and "→ d.bo" when a relief came during it.
export function dealtBy(r) {
  const who = roundDealer(r);
  const relieved = who.relieved === undefined ? null : who.relieved ?? "no dealer";
  return h("td", { class: "mono", "data-field": "dealt-by", "data-dealer": who.id ?? "" },
    who.id ?? h("span", { class: "muted", text: "no dealer" }),
    relieved === null ? null : h("span", { class: "muted", "data-field": "relieved-by", text: ` \u2192 ${relieved}`,
      title: "relieved during this round: the incoming dealer took over at its settlement" }));
}

function tableLinks(ids) {
  return h("span", { class: "muted", "data-field": "tables" }, "at ",
    ids.flatMap((id, i) => [i ? ", " : null, h("a", { class: "floor-id", href: `#/${encodeURIComponent(id)}`, text: id })]));
}

// The floor page's dealers (dealer_model.js floorDealers): those outside their control limits, the slowest paces.
export function floorDealersEl(m) {
  const outTitle = h("h2", { text: `Dealers outside their control limits (|win_z| > ${LIMIT_SD})` });
  const out = m.out.length
    ? h("ol", { class: "floor-out-list", "data-field": "dealers-out" }, m.out.map((d) => h("li", { "data-dealer": d.id },
      h("span", { class: "mono", "data-field": "dealer", text: d.id }),
      h("span", { class: "bad", "data-field": "win-z", text: fmtZ(d.z) }),
      h("span", { "data-field": "win", text: `win ${fmtCents(d.actual, true)} against ${d.theo === null ? DASH : fmtCents(d.theo, true)}` }),
      h("span", { class: "muted", "data-field": "rounds", text: count(d.rounds, "round") }),
      tableLinks(d.tables))))
    : h("p", { class: "muted", "data-field": "no-dealers-out",
      text: m.count ? "No dealer is outside their control limits." : "No table has published its dealers' figures yet." });
  const slowTitle = h("h2", { text: "Slowest paces" });
  const slow = m.slowest.length
    ? h("ol", { class: "floor-out-list", "data-field": "dealers-slowest" }, m.slowest.map((d) => h("li", { "data-dealer": d.id },
      h("span", { class: "mono", "data-field": "dealer", text: d.id }),
      h("span", { "data-field": "hph", "data-hph": d.hph.toFixed(3), text: `${d.hph.toFixed(1)} hands an hour` }),
      h("span", { class: "muted", "data-field": "rounds", text: `${count(d.rounds, "round")}, ${count(d.hands, "hand")}` }),
      d.errorsTotal ? h("span", { class: "warn", "data-field": "errors", text: count(d.errorsTotal, "procedure error") }) : null,
      tableLinks(d.tables))))
    : h("p", { class: "muted", "data-field": "no-dealers-slowest", text: "No dealer's pace known yet." });
  return [outTitle, out, slowTitle, slow];
}
