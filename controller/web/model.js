// The pit as the dashboard knows it: one record per table, fed by MQTT messages.
//
// Pure apart from the `now` passed in: no DOM, no MQTT. `Pit.apply(table, kind, payload,
// retained, now)` files a message under its table; the views read the records and the
// derived figures (staleness, deck clock, hold) computed here.
//
// Topics (DESIGN.md, "MQTT (contract)"): <prefix>/<table>/status|state|alarms|events and
// <prefix>/<table>/cmd/<verb>/result, <prefix>/<table>/history (the last settled rounds,
// retained; the table view subscribes to its own table's only) and <prefix>/<table>/analytics (hold against
// theoretical and pace since the table opened, retained). Retained messages delivered on subscribe are old news of
// unknown age, so they never count as a sign of life: only live messages move `lastLive`.

import { BETWEEN_ROUNDS, PHASE } from "./contract.js";

export const MAX_EVENTS = 200;
// The central recorder's own subtree (DESIGN.md, "The casino floor"): <prefix>/recorder/alarms and each table's
// position on <prefix>/recorder/<table_id>. Its alarms match the page's <prefix>/+/alarms, but it is no table.
export const RECORDER = "recorder";
// An open table (online, not `closed`) in the same phase for longer than this is marked idle.
export const IDLE_AFTER_S = 180;
// A table's control limits, in standard deviations of its win (docs/analytics.md): beyond WARN_SD it is
// watched (1 honest shift in 22 lands there), beyond LIMIT_SD it is outside its control limits (1 in 370).
export const WARN_SD = 2;
export const LIMIT_SD = 3;

export class TableRecord {
  constructor(id, now) {
    this.id = id;
    this.status = null; // "online" | "offline" | null (never heard)
    this.state = null; // last `state` snapshot
    this.stateAt = null; // when that snapshot arrived (ms)
    this.alarms = null; // last `alarms` list (null = never heard)
    this.events = []; // newest last; {seq, ts, type, ...} or {gap: n}
    this.lastEventSeq = null;
    this.lastLive = null; // last live (non-retained) message (ms)
    this.firstSeen = now;
    this.lastSettled = null; // the last `settled` snapshot seen
    this.history = null; // the retained `history`: the last settled rounds, oldest first (null = never heard)
    this.analytics = null; // the retained `analytics`: hold against theoretical and pace (null = never heard)
  }
}

export class Pit {
  constructor() {
    this.tables = new Map();
    this.connectedAt = null; // when the current broker session started
    this.connected = false;
  }

  table(id, now) {
    let t = this.tables.get(id);
    if (!t) {
      t = new TableRecord(id, now);
      this.tables.set(id, t);
    }
    return t;
  }

  // Split a topic under `prefix` into [table, kind]; kind is "status", "state", "alarms",
  // "events", "history", "analytics" or "result:<verb>". Anything else gives null.
  static route(prefix, topic) {
    if (!topic.startsWith(prefix + "/")) return null;
    const parts = topic.slice(prefix.length + 1).split("/");
    const table = parts[0];
    if (!table || table === RECORDER) return null;
    if (parts.length === 2 && ["status", "state", "alarms", "events", "history", "analytics"].includes(parts[1])) {
      return [table, parts[1]];
    }
    // <table>/cmd/<role>/<user>/<verb>/result: the answer to a command
    if (parts.length === 6 && parts[1] === "cmd" && parts[5] === "result") {
      return [table, "result:" + parts[4]];
    }
    return null;
  }

  // File one message. Returns true when something visible changed.
  apply(id, kind, text, retained, now) {
    if (kind === "status" && !text && retained) return false; // a cleared retained topic
    const t = this.table(id, now);
    if (!retained) t.lastLive = now;
    switch (kind) {
      case "status": {
        const s = text.trim();
        t.status = s === "online" || s === "offline" ? s : "unknown";
        return true;
      }
      case "state": {
        const state = parseJson(text);
        if (!state || typeof state !== "object" || Array.isArray(state)) return false;
        // A retained copy older than what we hold (a resubscribe) must not step back.
        if (retained && t.state && num(state.seq) < num(t.state.seq)) return false;
        t.state = state;
        t.stateAt = now;
        if (state.phase === PHASE.SETTLED) t.lastSettled = state;
        return true;
      }
      case "alarms": {
        const list = parseJson(text);
        t.alarms = Array.isArray(list) ? list.filter((a) => a && typeof a === "object") : [];
        return true;
      }
      case "history": {
        const list = parseJson(text);
        if (!Array.isArray(list)) return false;
        t.history = list.filter((r) => r && typeof r === "object" && !Array.isArray(r));
        return true;
      }
      case "analytics": {
        const a = parseJson(text);
        if (!a || typeof a !== "object" || Array.isArray(a)) return false;
        // a retained copy older than what we hold (a resubscribe) must not step back
        if (retained && t.analytics && num(a.seq) < num(t.analytics.seq)) return false;
        t.analytics = a;
        return true;
      }
      case "events": {
        const ev = parseJson(text);
        if (!ev || typeof ev !== "object") return false;
        const seq = Number.isInteger(ev.seq) ? ev.seq : null;
        if (seq !== null && t.lastEventSeq !== null) {
          // one that comes after later ones (a cluster losing its quorum delivers a table's resend late):
          // it fills its place in the gap it left; any other older one is a repeat after a restart
          if (seq <= t.lastEventSeq) return fillGap(t.events, seq, ev);
          if (seq > t.lastEventSeq + 1) t.events.push({ gap: seq - t.lastEventSeq - 1, from: t.lastEventSeq + 1 });
        }
        if (seq !== null) t.lastEventSeq = seq;
        t.events.push(ev);
        if (t.events.length > MAX_EVENTS) t.events.splice(0, t.events.length - MAX_EVENTS);
        return true;
      }
      default:
        return false;
    }
  }
}

// Put event `ev` (number `seq`) in the gap marker that holds its place, splitting the marker around it: the
// list stays in seq order, and a marker counts only what is still missing. False when no gap holds `seq`.
export function fillGap(events, seq, ev) {
  const i = events.findIndex((e) => e.gap && seq >= e.from && seq < e.from + e.gap);
  if (i < 0) return false;
  const { from, gap } = events[i];
  const parts = [];
  if (seq > from) parts.push({ gap: seq - from, from });
  parts.push(ev);
  if (seq < from + gap - 1) parts.push({ gap: from + gap - 1 - seq, from: seq + 1 });
  events.splice(i, 1, ...parts);
  return true;
}

// ---- derived figures -------------------------------------------------------------------

// Why a table's data cannot be trusted right now, or null when it is live.
export function staleness(pit, t, now, staleMs) {
  if (!pit.connected) return "broker disconnected";
  if (t.status === "offline") return "offline";
  if (t.status === null) return "no status";
  if (!t.state) return "no state";
  const phase = t.state.phase;
  if (phase === PHASE.CLOSED) return null; // a closed table is quiet on purpose
  const since = t.lastLive ?? Math.max(pit.connectedAt ?? t.firstSeen, t.firstSeen);
  const quiet = now - since;
  if (quiet > staleMs) return `no update for ${fmtDuration(quiet / 1000)}`;
  return null;
}

// Seconds the table has been in its phase, or null (a state without `ts`/`phase_since`).
// `ts - phase_since` is measured on the table's clock, and the time since the state arrived on
// the browser's: a skew between the two clocks cancels out. A retained state delivered at
// connect may be up to one clock tick old (the service republishes at least every 30 s).
export function phaseAgeS(t, now) {
  const s = t.state;
  if (!s || t.stateAt === null || !isFiniteNum(s.ts) || !isFiniteNum(s.phase_since)) return null;
  return Math.max(0, s.ts - s.phase_since) + Math.max(0, (now - t.stateAt) / 1000);
}

// Seconds an open, online table has been idle (in the same phase for IDLE_AFTER_S or more), or
// null. A closed or offline table is not idle.
export function idleS(t, now) {
  if (t.status !== "online" || !t.state || t.state.phase === PHASE.CLOSED) return null;
  const age = phaseAgeS(t, now);
  return age !== null && age >= IDLE_AFTER_S ? age : null;
}

// What an idle mark says: "idle for 4 min: no round in progress".
export function idleText(phase, s) {
  const why = BETWEEN_ROUNDS.has(phase) ? "no round in progress" : `round stalled in ${String(phase ?? "?").replace(/_/g, " ")}`;
  return `idle for ${fmtMinutes(s)}: ${why}`;
}

export function activeAlarmCount(t) {
  if (Array.isArray(t.alarms)) return t.alarms.length;
  return num(t.state?.alarms) || 0;
}

// Seconds the current deck set has been in use, or null.
export function deckAgeS(t, now) {
  const opened = Date.parse(t.state?.deck_set?.opened_at ?? "");
  return Number.isFinite(opened) ? Math.max(0, (now - opened) / 1000) : null;
}

// Seconds left before the deck change, counted down from the snapshot's figure.
export function deckDueS(t, now) {
  const due = t.state?.deck_set?.change_due_in_s;
  if (typeof due !== "number" || t.stateAt === null) return null;
  return due - (now - t.stateAt) / 1000;
}

export function penetration(t) {
  const p = t.state?.shoe?.penetration;
  return typeof p === "number" && Number.isFinite(p) ? Math.min(1, Math.max(0, p)) : null;
}

// House hold as a fraction (house_net / handle), or null.
export function hold(t) {
  const handle = parseMoney(t.state?.totals?.handle);
  const net = parseMoney(t.state?.totals?.house_net);
  if (handle === null || net === null || handle === 0) return null;
  return net / handle;
}

// ---- hold against theoretical ------------------------------------------------------------

// How far a table's win lies from its theoretical win: "ok", "warn" (beyond WARN_SD) or "out" (beyond
// LIMIT_SD: outside its control limits), or null when its analytics do not say yet.
export function controlZone(z) {
  if (typeof z !== "number" || !Number.isFinite(z)) return null;
  const a = Math.abs(z);
  return a > LIMIT_SD ? "out" : a > WARN_SD ? "warn" : "ok";
}

// Whether a table's `analytics` holds no z because its rounds are still too few for one to mean anything
// (below its `min_rounds`: docs/analytics.md); such a table is judged neither within nor outside its limits.
export function tooFewRounds(a) {
  return Boolean(a) && !isFiniteNum(a.win_z) && isFiniteNum(a.rounds) && isFiniteNum(a.min_rounds) && a.rounds > 0
    && a.rounds < a.min_rounds;
}

// A table's hold against theoretical from its `analytics`, or null: hold, theoretical hold, the z of its
// win and one standard deviation of its hold (one SD of its win over its handle), all fractions.
export function holdVsTheo(a) {
  if (!a || typeof a !== "object") return null;
  const handle = parseMoney(a.handle);
  if (handle === null || handle === 0) return null;
  const sd = parseMoney(a.win_sd);
  return {
    hold: isFiniteNum(a.hold) ? a.hold : null,
    theo: isFiniteNum(a.theoretical_hold) ? a.theoretical_hold : null,
    z: isFiniteNum(a.win_z) ? a.win_z : null,
    sd: sd === null ? null : sd / handle,
  };
}

// The pit's figures from its tables' `analytics` (each since that table last opened): money in cents,
// hold against theoretical over the tables whose theoretical win is known, and how many tables lie beyond
// WARN_SD and LIMIT_SD.
export function pitTotals(tables) {
  const out = { tables: 0, handle: 0, net: 0, theo: 0, theoHandle: 0, theoKnown: 0, warn: 0, out: 0, judged: 0 };
  for (const t of tables) {
    const a = t.analytics;
    const handle = parseMoney(a?.handle);
    const net = parseMoney(a?.house_net);
    if (handle === null || net === null) continue;
    out.tables += 1;
    out.handle += handle;
    out.net += net;
    const theo = parseMoney(a.theoretical_win);
    if (theo !== null) {
      out.theo += theo;
      out.theoHandle += handle;
      out.theoKnown += 1;
    }
    const zone = controlZone(a.win_z);
    if (zone !== null) out.judged += 1;
    if (zone === "out") out.out += 1;
    if (zone === "out" || zone === "warn") out.warn += 1;
  }
  out.hold = out.handle ? out.net / out.handle : null;
  out.theoHold = out.theoHandle && out.theoKnown ? out.theo / out.theoHandle : null;
  return out;
}

// ---- small helpers ---------------------------------------------------------------------

export function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function isFiniteNum(x) {
  return typeof x === "number" && Number.isFinite(x);
}

function num(x) {
  return typeof x === "number" ? x : Number.NEGATIVE_INFINITY;
}

// Money as written in the contract ("7.50", 5) -> integer cents, or null.
export function parseMoney(v) {
  if (typeof v === "number" && Number.isFinite(v)) return Math.round(v * 100);
  if (typeof v !== "string") return null;
  const m = /^([+-])?(\d+)(?:\.(\d{1,2}))?$/.exec(v.trim());
  if (!m) return null;
  const cents = Number(m[2]) * 100 + Number((m[3] ?? "").padEnd(2, "0"));
  return m[1] === "-" ? -cents : cents;
}

export function fmtMoney(v, signed = false) {
  const c = parseMoney(v);
  if (c === null) return v === null || v === undefined ? "" : String(v);
  const abs = Math.abs(c);
  const dollars = Math.floor(abs / 100).toLocaleString("en-US");
  const cents = abs % 100 ? "." + String(abs % 100).padStart(2, "0") : "";
  const sign = c < 0 ? "\u2212" : signed && c > 0 ? "+" : "";
  return `${sign}$${dollars}${cents}`;
}

// Integer cents as the page writes money: fmtCents(-1250, true) -> "−$12.50".
export function fmtCents(c, signed = false) {
  if (typeof c !== "number" || !Number.isFinite(c)) return "\u2013";
  const abs = Math.abs(Math.round(c));
  return fmtMoney(`${c < 0 ? "-" : ""}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`, signed);
}

export function fmtDuration(s) {
  if (s === null || !Number.isFinite(s)) return "\u2013";
  const neg = s < 0;
  let x = Math.round(Math.abs(s));
  const d = Math.floor(x / 86400);
  x %= 86400;
  const h = Math.floor(x / 3600);
  x %= 3600;
  const m = Math.floor(x / 60);
  const sec = x % 60;
  let out;
  if (d) out = `${d}d ${h}h`;
  else if (h) out = `${h}h ${String(m).padStart(2, "0")}m`;
  else if (m) out = `${m}m ${String(sec).padStart(2, "0")}s`;
  else out = `${sec}s`;
  return neg ? "\u2212" + out : out;
}

// A time in phase: "12 s", "3 min 05 s", "1 h 02 min".
export function fmtAge(s) {
  if (s === null || !Number.isFinite(s)) return "\u2013";
  const x = Math.floor(Math.max(0, s));
  if (x < 60) return `${x} s`;
  if (x < 3600) return `${Math.floor(x / 60)} min ${String(x % 60).padStart(2, "0")} s`;
  return `${Math.floor(x / 3600)} h ${String(Math.floor((x % 3600) / 60)).padStart(2, "0")} min`;
}

// Whole minutes: "4 min", "1 h 02 min".
export function fmtMinutes(s) {
  const m = Math.floor(Math.max(0, s) / 60);
  return m < 60 ? `${m} min` : `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, "0")} min`;
}
