// The dealer on duty and each dealer's figures, as the screens show them (DESIGN.md, "The dealer on duty";
// docs/analytics.md, the `dealers` of a table's analytics).
//
// Pure (no DOM, no MQTT; `now` passed in): it reads the records model.js keeps. The dealer on duty is an id and
// nothing else: never a card (`state.dealer` is the dealer's hand, and its hole card is no concern of this file).
// A dealer's control limits are a table's (controlZone in model.js): one rule, not a second. Across tables a
// dealer's figures are combined the way the floor combines tables: money summed, `win_z` over the sum of the
// parts' variances (each part's `win_sd` squared), pace as the hands over the hours on duty (each part's
// `on_duty_s`): the two fields the tables publish for this (docs/analytics.md).

import { controlZone, parseMoney } from "./model.js";

// how many of the slowest dealers the floor page lists
export const SLOWEST = 5;
// the minimum sample of a `win_z` when an analytics message names none (docs/analytics.md, `min_rounds`)
export const MIN_ROUNDS = 10;

const isNum = (x) => typeof x === "number" && Number.isFinite(x);
const isObj = (x) => x !== null && typeof x === "object" && !Array.isArray(x);
// one collator for every comparison (localeCompare with options makes a new one at each call)
const natural = new Intl.Collator("en", { numeric: true }).compare;
const byId = (a, b) => natural(a.id, b.id);

// A time as a table writes it (epoch seconds, epoch milliseconds or an ISO string) in epoch seconds, or null.
export function epochS(v) {
  if (isNum(v)) return v > 1e12 ? v / 1000 : v;
  if (typeof v !== "string" || !v.trim()) return null;
  const ms = Date.parse(v);
  return Number.isFinite(ms) ? ms / 1000 : null;
}

// The dealer on duty at table `t`: {id, ageS} (seconds since that dealer's sign-in or relief, null when the state
// does not say when), or null for no dealer. The age is the state's own `ts - since` plus the time since the state
// arrived on the browser's clock, so a skew between the two clocks cancels out and the minutes go on counting
// between messages; a state without `ts` is read against the browser's clock.
export function dealerOnDuty(t, now) {
  const d = t?.state?.dealer_on_duty;
  if (!isObj(d) || typeof d.id !== "string" || !d.id) return null;
  const since = epochS(d.since);
  if (since === null) return { id: d.id, ageS: null };
  const ts = t.state.ts;
  const ageS = isNum(ts) && t.stateAt !== null
    ? Math.max(0, epochS(ts) - since) + Math.max(0, (now - t.stateAt) / 1000)
    : Math.max(0, now / 1000 - since);
  return { id: d.id, ageS };
}

// Whether the table says who deals at all (`dealer_on_duty`, null for no dealer): a table of a program from before
// dealers says nothing, and the screens then show nothing of it rather than "no dealer".
export function namesDealer(state) {
  return isObj(state) && "dealer_on_duty" in state;
}

// Whether the table, with no dealer on duty, holds its betting until one signs in (`require_dealer` in its
// settings): the state waits for a dealer (`awaiting: "dealer"` between rounds), or play is halted for want of one
// (`halted`: "no dealer on duty: ..."), or it carries the setting itself.
export function waitsForDealer(state) {
  if (!isObj(state) || isObj(state.dealer_on_duty)) return false;
  return state.require_dealer === true || state.awaiting === "dealer"
    || (typeof state.halted === "string" && state.halted.startsWith("no dealer"));
}

// A dealer's procedure errors as [code, count] pairs, the most first (then by code), and their total.
export function errorsOf(d) {
  const pairs = Object.entries(isObj(d?.procedure_errors) ? d.procedure_errors : {})
    .filter(([, n]) => isNum(n) && n > 0)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return { pairs, total: pairs.reduce((s, [, n]) => s + n, 0) };
}

// The rows of a table's per-dealer figures (its `analytics.dealers`), by dealer id: rounds, hands, hands an hour,
// errors, initial wagers, actual and theoretical win (money as the table writes it), win_z and its zone; `z`
// carries what analytics.js zText needs to say "too few rounds".
export function dealerRows(a) {
  if (!isObj(a?.dealers)) return [];
  return Object.entries(a.dealers).filter(([id, d]) => id && isObj(d)).map(([id, d]) => {
    const z = isNum(d.win_z) ? d.win_z : null;
    return {
      id,
      rounds: isNum(d.rounds) ? d.rounds : null,
      hands: isNum(d.hands) ? d.hands : null,
      hph: isNum(d.hands_per_hour) ? d.hands_per_hour : null,
      errors: errorsOf(d),
      initial: d.initial_wagers ?? null,
      actual: d.actual_win ?? null,
      theo: d.theoretical_win ?? null,
      z: { win_z: z, rounds: d.rounds, min_rounds: isNum(d.min_rounds) ? d.min_rounds : a.min_rounds ?? MIN_ROUNDS },
      zone: controlZone(z),
    };
  }).sort(byId);
}

// The hours a dealer was on duty at a table (`on_duty_s`, the base of its `hands_per_hour`), or null.
function hoursOf(d) {
  return isNum(d.on_duty_s) && d.on_duty_s > 0 ? d.on_duty_s / 3600 : null;
}

// A table's dealers read once per `analytics` message (a floor combines them again at each message of any table):
// [id, part] with the money in cents.
const partsCache = new WeakMap();
function partsOf(a) {
  let parts = partsCache.get(a);
  if (parts) return parts;
  const minRounds = isNum(a.min_rounds) ? a.min_rounds : MIN_ROUNDS;
  parts = Object.entries(a.dealers).filter(([id, d]) => id && isObj(d)).map(([id, d]) => [id, {
    rounds: isNum(d.rounds) ? d.rounds : 0,
    hands: isNum(d.hands) ? d.hands : 0,
    hours: isNum(d.hands) ? hoursOf(d) : null,
    errors: errorsOf(d).pairs,
    initial: parseMoney(d.initial_wagers) ?? 0,
    actual: parseMoney(d.actual_win) ?? 0,
    theo: parseMoney(d.theoretical_win),
    sd: parseMoney(d.win_sd),
    z: isNum(d.win_z) ? d.win_z : null,
    // a part with no round yet (a dealer just signed in) has no variance and changes nothing of the win
    dealt: !isNum(d.rounds) || d.rounds > 0,
    minRounds: isNum(d.min_rounds) ? d.min_rounds : minRounds,
  }]);
  partsCache.set(a, parts);
  return parts;
}

// Each dealer across the floor's tables, combined from every table's `analytics.dealers`: the tables they dealt
// at, rounds, hands, pace (the hands over the hours on duty), errors by code, money in cents, win_z (one table:
// its own; several: over the sum of the parts' variances, null when a part gives no `win_sd` or the rounds are
// too few) and its zone. By dealer id.
export function combineDealers(tables) {
  const all = new Map();
  for (const t of tables) {
    const a = t.analytics;
    if (!isObj(a?.dealers)) continue;
    for (const [id, p] of partsOf(a)) {
      let c = all.get(id);
      if (!c) {
        c = { id, tables: [], parts: [], rounds: 0, hands: 0, paceHands: 0, hours: 0, errors: new Map(), initial: 0,
          actual: 0, theo: 0, theoKnown: true, variance: 0, sdKnown: true, minRounds: p.minRounds };
        all.set(id, c);
      }
      c.tables.push(t.id);
      c.parts.push(p);
      c.minRounds = Math.max(c.minRounds, p.minRounds);
      c.rounds += p.rounds;
      c.hands += p.hands;
      if (p.hours !== null) {
        c.hours += p.hours;
        c.paceHands += p.hands;
      }
      for (const [code, n] of p.errors) c.errors.set(code, (c.errors.get(code) ?? 0) + n);
      c.initial += p.initial;
      c.actual += p.actual;
      if (p.theo !== null) c.theo += p.theo;
      else if (p.dealt) c.theoKnown = false;
      if (p.sd !== null) c.variance += p.sd * p.sd;
      else if (p.dealt) c.sdKnown = false;
    }
  }
  return [...all.values()].map((c) => {
    let z = null;
    if (c.parts.length === 1) z = c.parts[0].z;
    else if (c.theoKnown && c.sdKnown && c.variance > 0 && c.rounds >= c.minRounds) z = (c.actual - c.theo) / Math.sqrt(c.variance);
    const errors = [...c.errors].sort((x, y) => y[1] - x[1] || x[0].localeCompare(y[0]));
    return {
      id: c.id,
      tables: c.tables.sort(natural),
      rounds: c.rounds,
      hands: c.hands,
      hph: c.hours > 0 ? c.paceHands / c.hours : null,
      // a pace over fewer rounds than a win_z needs says as little: it is not ranked
      paceJudged: c.hours > 0 && c.rounds >= c.minRounds,
      errors,
      errorsTotal: errors.reduce((s, [, n]) => s + n, 0),
      initial: c.initial,
      actual: c.actual,
      theo: c.theoKnown ? c.theo : null,
      z,
      zone: controlZone(z),
      tooFew: z === null && c.rounds > 0 && c.rounds < c.minRounds,
    };
  }).sort(byId);
}

// What the floor page lists of its dealers: how many there are, those outside their control limits (the farthest
// out first) and the SLOWEST slowest paces (the slowest first) of those with the minimum sample of rounds.
export function floorDealers(tables, slowest = SLOWEST) {
  const dealers = combineDealers(tables);
  return {
    count: dealers.length,
    out: dealers.filter((d) => d.zone === "out").sort((a, b) => Math.abs(b.z) - Math.abs(a.z) || byId(a, b)),
    slowest: dealers.filter((d) => d.paceJudged).sort((a, b) => a.hph - b.hph || byId(a, b)).slice(0, slowest),
  };
}

// Who dealt a round of the history, as `tablectl recall` says (controller/reports/recall.py dealer_of): its
// `dealer_id`, else the one its `no_more_bets` event named; `relieved` who took over when a relief came during it
// (`relieved_by`, the round's or its `round_settled`'s; null for a sign-out; undefined: no relief); `named` false
// for a round of a table from before dealers.
export function roundDealer(r) {
  const evs = Array.isArray(r?.events) ? r.events.filter(isObj) : [];
  const closed = evs.find((e) => e.type === "no_more_bets" && "dealer_id" in e);
  const settled = evs.find((e) => e.type === "round_settled" && "relieved_by" in e);
  const own = isObj(r) && "dealer_id" in r;
  const id = own ? r.dealer_id : closed?.dealer_id;
  const relieved = isObj(r) && "relieved_by" in r ? r.relieved_by : settled ? settled.relieved_by : undefined;
  const str = (x) => (typeof x === "string" && x ? x : null);
  return { named: own || closed !== undefined, id: str(id), relieved: relieved === undefined ? undefined : str(relieved) };
}
