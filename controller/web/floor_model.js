// The casino floor as the floor page (#floor) shows it: every table grouped by its pit, each pit's and the
// floor's hold against theoretical, and the tables outside their control limits first.
//
// Pure (no DOM, no MQTT; `now` passed in): it reads the records model.js keeps from each table's retained
// `state` and `analytics`. A table's pit is the `pit` its `state` (else its `analytics`) carries, the table
// config's `pit`; a table that names none is in the pit "unassigned". The control limit is the one the pit bar
// and the tiles use (LIMIT_SD in model.js): one rule, not a second.

import { LIMIT_SD, controlZone, pitTotals, staleness } from "./model.js";

// what the page calls the pit of a table that names none
export const UNASSIGNED = "unassigned";

// The pit a table says it is in, or null.
export function pitOf(t) {
  for (const p of [t.state?.pit, t.analytics?.pit]) {
    if (typeof p === "string" && p.trim()) return p.trim();
  }
  return null;
}

const byId = (a, b) => a.id.localeCompare(b.id, "en", { numeric: true });

// The program a table runs, from its `state`'s `software` (DESIGN "Program authentication"): the build digest
// (null: unverified or not matching its RECORD) and the version; null when the table says nothing of it.
export function softwareOf(t) {
  const s = t.state?.software;
  if (!s || typeof s !== "object") return null;
  return { build: typeof s.build === "string" && s.build ? s.build : null,
    version: typeof s.version === "string" ? s.version : null };
}

// The build most tables run (ties: the smaller digest, so every screen picks the same), or null.
export function commonBuild(rows) {
  const counts = new Map();
  for (const r of rows) if (r.build) counts.set(r.build, (counts.get(r.build) ?? 0) + 1);
  let best = null;
  for (const [b, n] of counts) {
    const bn = best === null ? 0 : counts.get(best);
    if (n > bn || (n === bn && b < best)) best = b;
  }
  return best;
}

// Tables outside their control limits first (the farthest out first), then the others by table id.
export function floorOrder(a, b) {
  const ao = a.zone === "out";
  const bo = b.zone === "out";
  if (ao !== bo) return ao ? -1 : 1;
  if (ao) return Math.abs(b.z) - Math.abs(a.z) || byId(a, b);
  return byId(a, b);
}

// Pits by name (pit 2 before pit 10), the unassigned tables last.
function pitOrder(a, b) {
  if ((a.pit === null) !== (b.pit === null)) return a.pit === null ? 1 : -1;
  return (a.pit ?? "").localeCompare(b.pit ?? "", "en", { numeric: true });
}

// What a table's row shows: only these fields, so a `state` that changes nothing here changes no row.
export function tableRow(pit, t, now, staleMs) {
  const a = t.analytics;
  const stale = staleness(pit, t, now, staleMs);
  const z = typeof a?.win_z === "number" && Number.isFinite(a.win_z) ? a.win_z : null;
  return {
    id: t.id,
    pit: pitOf(t),
    status: t.status ?? "unknown",
    // whether, not why: the reason's wording ("no update for 1m 05s") changes every second
    stale: stale === null ? null : stale === "offline" ? "offline" : "stale",
    rounds: a?.rounds ?? null,
    handle: a?.handle ?? null,
    net: a?.house_net ?? null,
    theo: a?.theoretical_win ?? null,
    hold: typeof a?.hold === "number" ? a.hold : null,
    theoHold: typeof a?.theoretical_hold === "number" ? a.theoretical_hold : null,
    z,
    zone: controlZone(z),
    // the program it runs; buildMark (set by floorModel): "differs" from the floor's most common build,
    // "unverified" (no build digest), null (the common one, or the table says nothing of its program)
    build: softwareOf(t)?.build ?? null,
    version: softwareOf(t)?.version ?? null,
    software: softwareOf(t) !== null,
    buildMark: null,
    // what the hold bar draws (analytics.js holdBar)
    bar: a ? { handle: a.handle, hold: a.hold, theoretical_hold: a.theoretical_hold, win_z: a.win_z, win_sd: a.win_sd, rounds: a.rounds, min_rounds: a.min_rounds } : null,
  };
}

// The floor: its totals, the tables outside their control limits (all pits, farthest out first), and the pits
// (each with its totals and its rows in floorOrder).
export function floorModel(pit, now, staleMs) {
  const groups = new Map();
  const rows = [];
  for (const t of pit.tables.values()) {
    const row = tableRow(pit, t, now, staleMs);
    rows.push(row);
    let g = groups.get(row.pit);
    if (!g) {
      g = { pit: row.pit, rows: [], records: [] };
      groups.set(row.pit, g);
    }
    g.rows.push(row);
    g.records.push(t);
  }
  const common = commonBuild(rows);
  for (const r of rows) {
    if (r.software) r.buildMark = r.build === null ? "unverified" : r.build !== common ? "differs" : null;
  }
  const pits = [...groups.values()].sort(pitOrder).map((g) => ({
    pit: g.pit,
    name: g.pit ?? UNASSIGNED,
    count: g.rows.length,
    live: g.rows.filter((r) => r.status === "online" && r.stale === null).length,
    totals: pitTotals(g.records),
    rows: g.rows.sort(floorOrder),
  }));
  return {
    tables: rows.length,
    live: rows.filter((r) => r.status === "online" && r.stale === null).length,
    totals: pitTotals(pit.tables.values()),
    pits,
    out: rows.filter((r) => r.zone === "out").sort(floorOrder),
    limit: LIMIT_SD,
    build: common,
    builds: new Set(rows.map((r) => r.build).filter(Boolean)).size,
  };
}
