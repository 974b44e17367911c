// Pit dashboard: subscribes to the tables over MQTT WebSockets (mqtt.js, global `mqtt`) and
// draws a pit overview (#), the floor page (#floor: every pit, floor.js) and one table (#/<table_id>).
//
// Configuration, first found wins: the page's query (?prefix=tables&stale=60&readonly=1&login=1), then
// `config.json` beside the page ({"brokers": [...], "prefix": ...}), then prefix "tables". The broker comes from
// config.json only (the server's configuration; its Content-Security-Policy allows those and no other): ?broker=
// may pick one or more of the brokers it lists, anything else is ignored with a note beside the prefix, so a link
// cannot send a login to another broker. Without config.json there is no broker to connect to.
//
// Login (DESIGN.md, "Operators and roles"): the page first connects without credentials (a
// broker may take anonymous clients; the demo's own does not); when the broker refuses it, or the address
// says login=1, a form asks for a user name, a password and the role the person holds (a pit
// screen, `dashboard` or `dashboard-N`, is read-only), which stay in this page's memory only
// (never in the address or localStorage). A command goes on the sender's own topic,
// <prefix>/<table>/cmd/<role>/<user>/<verb>: the broker lets each user write only its own name
// and its roles' verbs, and the table checks the role again per alarm kind (a role the user
// lacks gets no answer from the broker, or a refusal from the table, and the page says so).
// An alarm shows its Acknowledge button only to a role that may clear its kind (the role table
// and the alarm kinds come with contract.js, from controller/contract); an integrity alarm, and any alarm
// surveillance clears, needs a reason, typed beside its button. Without a login (an anonymous broker)
// the page sends as `anonymous` in the role that clears the alarm's kind.
//
// Every message goes into the model (model.js); drawing is batched to one frame and each
// section is rebuilt only when what it shows changed, so buttons stay put under a busy feed.
// Everything from the wire reaches the page through textContent, never as HTML.

import {
  Pit,
  activeAlarmCount,
  controlZone,
  deckAgeS,
  deckDueS,
  fmtAge,
  fmtDuration,
  fmtMinutes,
  fmtMoney,
  hold,
  idleS,
  idleText,
  parseJson,
  parseMoney,
  penetration,
  phaseAgeS,
  pitTotals,
  staleness,
} from "./model.js";
import { WinChart, figures, flaggedSpots, holdBar, pitBar, shuffleScores } from "./analytics.js";
import { FloorView } from "./floor.js";
import { dealerOnDuty, dealerRows, namesDealer, roundDealer, waitsForDealer } from "./dealer_model.js";
import { dealerFigures, dealtBy, dutyEl, dutyMinutes } from "./dealers.js";
import { RecorderRecord, recorderTopic } from "./recorder_model.js";
import { cardEl, cardsEl, isCardCode } from "./cards.js";
import { ROLES, USER_NAME, alarmKind } from "./contract.js";
import { h, renderIfChanged } from "./dom.js";

// What a screen subscribes with: QoS 0 (see connect(): a clean session redelivers nothing, and on a NATS
// cluster each QoS 1 subscription is a JetStream consumer that cannot be made while the cluster elects leaders).
const SCREEN_QOS = 0;

const SPOTS = 7;
const ACK_TIMEOUT_MS = 5000;

// the pit screens' users
const SCREEN_USER = /^dashboard(-[0-9]+)?$/;

const DECK_WARN_S = 1800;
// what the floor page does not show: a message of these kinds does not redraw it
const FLOOR_IGNORES = new Set(["events", "alarms", "history"]);

const $ = (id) => document.getElementById(id);

// ---- configuration ---------------------------------------------------------------------

async function loadConfig() {
  const q = new URLSearchParams(location.search);
  let file = {};
  try {
    const r = await fetch("config.json", { cache: "no-store" });
    if (r.ok) file = (await r.json()) ?? {};
  } catch {
    file = {};
  }
  const { broker, brokerNote } = pickBroker(q.get("broker"), file);
  const staleS = Number(q.get("stale") ?? file.stale_s ?? 60);
  return {
    broker,
    brokerNote,
    prefix: (q.get("prefix") || file.prefix || "tables").replace(/^\/+|\/+$/g, ""),
    staleMs: (Number.isFinite(staleS) && staleS > 0 ? staleS : 60) * 1000,
    readonly: ["1", "true", "yes"].includes((q.get("readonly") ?? String(file.readonly ?? "")).toLowerCase()),
    login: ["1", "true", "yes"].includes((q.get("login") ?? String(file.login ?? "")).toLowerCase()),
    roles: ROLES,
  };
}

// The brokers the server offers (config.json), and which of them the address's ?broker= picks: only those.
function pickBroker(asked, file) {
  const split = (s) => String(s ?? "").split(",").map((u) => u.trim()).filter(Boolean);
  const offered = Array.isArray(file.brokers) ? file.brokers.map(String) : split(file.broker);
  if (!offered.length) return { broker: "", brokerNote: "no broker: this server's config.json names none" };
  const picked = split(asked);
  if (!picked.length) return { broker: offered.join(","), brokerNote: "" };
  if (picked.every((u) => offered.includes(u))) return { broker: picked.join(","), brokerNote: "" };
  return { broker: offered.join(","), brokerNote: `?broker=${asked} ignored: not a broker this server offers` };
}

// ---- DOM helpers -----------------------------------------------------------------------

function fmtTime(ts) {
  let d = null;
  if (typeof ts === "number") d = new Date(ts > 1e12 ? ts : ts * 1000);
  else if (typeof ts === "string") d = new Date(ts);
  if (!d || Number.isNaN(d.getTime())) return "";
  return d.toLocaleTimeString("en-GB", { hour12: false });
}

function fmtPct(x, digits = 0) {
  if (x === null) return "\u2013";
  const text = (x * 100).toFixed(digits);
  return `${/^-0(\.0+)?$/.test(text) ? text.slice(1) : text}%`; // never "-0.0%": a rounding, not a loss
}

// Which alarms, for a tile: their codes, readable ("shuffle quality, deck change due"), or the count alone.
function alarmNames(t) {
  const list = Array.isArray(t.alarms) ? t.alarms : [];
  const names = [...new Set(list.map((a) => label(a.code ?? a.type ?? "")).filter(Boolean))];
  return names.length ? names.join(", ") : null;
}

function label(s) {
  return String(s ?? "").replace(/_/g, " ");
}

// An event's object field as a person reads it: "key value" pairs (nested ones as JSON), whole pairs only;
// what does not fit says how many more there are, and the whole value is in the tooltip (never cut JSON).
function readable(v, room = 160) {
  const pairs = Array.isArray(v) ? v.map((x) => (typeof x === "object" && x !== null ? JSON.stringify(x) : String(x)))
    : Object.entries(v).filter(([, x]) => x !== null && x !== undefined)
      .map(([k, x]) => `${label(k)} ${typeof x === "object" ? JSON.stringify(x) : String(x)}`);
  const shown = [];
  let used = 0;
  for (const p of pairs) {
    if (shown.length && used + p.length > room) break;
    shown.push(p);
    used += p.length + 2;
  }
  const more = pairs.length - shown.length;
  return h("span", { title: JSON.stringify(v), text: shown.join(", ") + (more ? ` \u2026 (+${more} more)` : "") });
}

// ---- the app ---------------------------------------------------------------------------

class App {
  constructor(cfg) {
    this.cfg = cfg;
    this.pit = new Pit();
    this.recorder = new RecorderRecord(); // the central recorder's alarms and positions (the floor page shows them)
    this.client = null;
    this.pending = new Map(); // `${table}:${alarmId}` -> {table, alarmId, sentAt, timer}
    this.ackResult = new Map(); // table -> {text, ok, at}
    this.commands = new Map(); // request id -> {table, verb, timer}: the pit commands awaiting their answer
    this.cmdResult = new Map(); // table -> {text, ok, at}
    this.connState = "connecting";
    this.connDetail = "";
    this.frame = 0;
    this.creds = null; // {username, password} once logged in: in memory only
    this.role = "anonymous"; // "anonymous" | "screen" (read-only) | a role of cfg.roles
    this.historyTopic = null; // the one table's `history` this page is subscribed to
    this.chart = null; // the table view's chart of actual against theoretical win (uPlot)
    this.floor = null; // the floor page (#floor): every pit's hold against theoretical
  }

  start() {
    this.chart = new WinChart($("analytics-chart"));
    this.floor = new FloorView($("floor"));
    $("prefix").textContent = `${this.cfg.prefix}/# on ${this.cfg.broker}` +
      (this.cfg.brokerNote ? ` (${this.cfg.brokerNote})` : "");
    for (const id of ["filter", "show", "sort"]) $(id).addEventListener("input", () => this.render());
    window.addEventListener("hashchange", () => this.render());
    $("alarms").addEventListener("click", (e) => {
      const b = e.target.closest("button[data-ack]");
      if (!b || b.disabled) return;
      const reason = b.closest("li")?.querySelector("input[data-reason]");
      this.ack(b.dataset.table, Number(b.dataset.ack), reason ? reason.value.trim() : null);
    });
    $("limits-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const table = this.viewedTable();
      if (table) this.send(table, "set_limits", { min_bet: $("limits-min").value.trim(), max_bet: $("limits-max").value.trim() });
    });
    for (const id of ["cmd-close", "cmd-open"]) {
      $(id).addEventListener("click", (e) => {
        const table = this.viewedTable();
        if (table) this.send(table, e.currentTarget.dataset.verb, {});
      });
    }
    // the login's roles: the contract's roles that send commands, then the read-only pit screen
    $("login-role").prepend(...Object.keys(this.cfg.roles).map((r) => h("option", { value: r, text: r })));
    $("login-role").selectedIndex = 0;
    $("login-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.login($("login-user").value.trim(), $("login-password").value, $("login-role").value);
    });
    $("login-user").addEventListener("input", () => {
      if (SCREEN_USER.test($("login-user").value.trim())) $("login-role").value = "screen";
    });
    setInterval(() => this.render(), 1000);
    if (this.cfg.login) this.showLogin("");
    else this.connect();
    this.render();
  }

  // ---- login ----

  showLogin(message) {
    const brokers = String(this.cfg.broker).split(",");
    $("login-broker").textContent = `${brokers.length > 1 ? "Brokers" : "Broker"} ${brokers.join(", ")}`;
    $("login").hidden = false;
    document.querySelector("main").hidden = true;
    const err = $("login-error");
    err.hidden = !message;
    err.textContent = message;
    $("login-password").value = "";
    $($("login-user").value ? "login-password" : "login-user").focus();
  }

  login(username, password, role) {
    if (!username || !password) {
      this.showLogin("Enter a user name and a password.");
      return;
    }
    if (!USER_NAME.test(username)) {
      this.showLogin("A user name is 1 to 64 of a-z 0-9 . _ - (lower case): the one broker-config made for you.");
      return;
    }
    if (role !== "screen" && !(role in this.cfg.roles)) {
      this.showLogin("Choose the role you hold.");
      return;
    }
    this.creds = { username, password };
    this.role = SCREEN_USER.test(username) ? "screen" : role;
    $("login-password").value = "";
    $("login").hidden = true;
    document.querySelector("main").hidden = false;
    const u = $("user");
    u.hidden = false;
    u.dataset.role = this.role;
    u.textContent = `${username} (${this.role === "screen" ? "read-only" : this.role})`;
    this.connect();
  }

  // who sends a command: the topic's user, which the table journals as its operator
  operator() {
    return this.creds ? this.creds.username : "anonymous";
  }

  mayCommand() {
    return !this.cfg.readonly && this.role !== "screen";
  }

  // the role this page acknowledges `alarm` as, or null when the user's role may not clear its kind
  ackRole(alarm) {
    if (!this.mayCommand()) return null;
    const kind = alarmKind(alarm);
    const clears = (role) => (this.cfg.roles[role]?.alarm_kinds ?? []).includes(kind);
    if (this.role === "anonymous") return Object.keys(this.cfg.roles).find(clears) ?? null;
    return clears(this.role) ? this.role : null;
  }

  // who may clear `alarm`, for the screen of a user who may not
  clearedBy(alarm) {
    const kind = alarmKind(alarm);
    return Object.keys(this.cfg.roles).filter((r) => (this.cfg.roles[r].alarm_kinds ?? []).includes(kind));
  }

  // the role this page sends `verb` as, or null when the user's role does not send it
  verbRole(verb) {
    if (!this.mayCommand()) return null;
    const sends = (role) => (this.cfg.roles[role]?.verbs ?? []).includes(verb);
    if (this.role === "anonymous") return Object.keys(this.cfg.roles).find(sends) ?? null;
    return sends(this.role) ? this.role : null;
  }

  needsReason(alarm, role) {
    return Boolean(alarm.integrity) || Boolean(this.cfg.roles[role]?.reason_required);
  }

  connect() {
    if (this.client) this.client.end(true);
    const clientId = "pitdash-" + Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, "0")).join("");
    const options = {
      clientId,
      protocolVersion: 4, // MQTT 3.1.1: Mosquitto and the demo's embedded broker both speak it
      clean: true,
      keepalive: 30,
      reconnectPeriod: 2000,
      connectTimeout: 5000,
    };
    if (this.creds) {
      options.username = this.creds.username;
      options.password = this.creds.password;
    }
    // A floor's cluster: several WebSockets addresses, comma-separated; mqtt.js moves to the next on a reconnect.
    const urls = this.cfg.broker.split(",").map((u) => u.trim()).filter(Boolean);
    if (!urls.length) {
      this.setConn("error", this.cfg.brokerNote);
      return;
    }
    if (urls.length > 1) {
      options.servers = urls.map((u) => {
        const a = new URL(u);
        return { host: a.hostname, port: Number(a.port) || (a.protocol === "wss:" ? 443 : 80), protocol: a.protocol.replace(":", "") };
      });
    }
    this.setConn("connecting", "");
    const client = mqtt.connect(urls[0], options);
    this.client = client;
    const p = this.cfg.prefix;
    client.on("connect", () => {
      this.pit.connected = true;
      this.pit.connectedAt = Date.now();
      this.setConn("connected", "");
      // and the central recorder's alarms and positions (<prefix>/recorder/alarms, <prefix>/recorder/<table_id>)
      const topics = [...["status", "state", "alarms", "events", "analytics", "cmd/+/+/+/result"].map((k) => `${p}/+/${k}`),
        `${p}/recorder/+`];
      // QoS 0: a screen's session is clean, so QoS 1 would redeliver nothing a reconnect does not (the retained
      // copies come again with each subscription); on a NATS cluster a QoS 1 subscription is a JetStream consumer
      // made for each topic, which times out while the cluster elects leaders after a node loss ("Unable to
      // add JetStream consumer ... timeout", seen in tests/floor/test_floor_page_cluster.py) and keeps the screen
      // dark, and costs the cluster a replicated consumer per screen and topic. A QoS 0 subscription needs none.
      const subscribe = () => client.subscribe(topics, { qos: SCREEN_QOS }, (err, granted) => {
        // SUBACK 0x80 (mqtt.js reports it as an error): a floor's cluster refuses subscriptions for a few
        // seconds after losing a node (its streams elect new leaders); ask again rather than stay connected
        // to nothing, and say so meanwhile.
        if (!err && !(granted ?? []).some((g) => g.qos === 128)) {
          if (this.connState !== "connected") this.setConn("connected", "");
          return;
        }
        this.setConn("connecting", `subscription refused${err ? ` (${err.message})` : ""}: asking again`);
        setTimeout(() => { if (this.client === client && client.connected) subscribe(); }, 2000);
      });
      subscribe();
      this.historyTopic = null; // a new session: subscribe the table view's history again
      this.followHistory(this.viewedTable());
    });
    client.on("reconnect", () => this.setConn("connecting", "reconnecting"));
    client.on("close", () => {
      this.pit.connected = false;
      if (this.connState !== "error") this.setConn("offline", "disconnected, retrying");
    });
    client.on("error", (err) => {
      // CONNACK 4/5 (MQTT 3.1.1) or 134/135 (MQTT 5): the broker refused these credentials
      if ([4, 5, 134, 135].includes(err?.code)) {
        client.end(true);
        if (this.client !== client) return;
        this.client = null;
        this.pit.connected = false;
        const refusedLogin = this.creds !== null;
        this.creds = null; // a refused password is not kept, nor retried
        this.role = "anonymous";
        $("user").hidden = true;
        this.setConn("error", refusedLogin ? "login refused" : "the broker needs a login");
        this.showLogin(refusedLogin ? "Wrong user name or password: the broker refused the login." : "");
        return;
      }
      this.setConn("error", err?.message ?? String(err));
    });
    client.on("message", (topic, payload, packet) => this.onMessage(topic, payload, packet));
  }

  // The table view shows its table's last rounds from the retained `history` (retained, about
  // 6 kB a round): only the table on screen is subscribed, so a big pit costs nothing at page load.
  followHistory(tableId) {
    const topic = tableId === null ? null : `${this.cfg.prefix}/${tableId}/history`;
    const client = this.client;
    if (topic === this.historyTopic || !client || !client.connected) return;
    if (this.historyTopic) client.unsubscribe(this.historyTopic);
    this.historyTopic = topic;
    if (topic) {
      client.subscribe(topic, { qos: SCREEN_QOS }, (err) => {
        if (!err) return;
        // refused (a cluster electing leaders after a node loss): ask again in a moment, as for the pit's topics
        if (this.historyTopic === topic) this.historyTopic = null;
        setTimeout(() => { if (this.client === client) this.followHistory(this.viewedTable()); }, 2000);
      });
    }
  }

  // the floor page's address: #floor (a table's is #/<table_id>)
  floorShown() {
    return location.hash === "#floor";
  }

  viewedTable() {
    const m = /^#\/(.+)$/.exec(location.hash);
    return m ? decodeURIComponent(m[1]) : null;
  }

  setConn(state, detail) {
    this.connState = state;
    this.connDetail = detail;
    this.scheduleRender();
  }

  onMessage(topic, payload, packet) {
    const recorder = recorderTopic(this.cfg.prefix, topic);
    if (recorder !== null) {
      if (this.recorder.apply(recorder, new TextDecoder().decode(payload)) && this.floorShown()) this.scheduleRender();
      return;
    }
    const route = Pit.route(this.cfg.prefix, topic);
    if (!route) return;
    const [table, kind] = route;
    const text = new TextDecoder().decode(payload);
    const now = Date.now();
    if (kind.startsWith("result:")) {
      if (!packet.retain) this.onResult(table, kind.slice(7), text, now);
      return;
    }
    // the floor page shows no event, alarm or history: on a busy floor most messages then draw nothing
    if (this.pit.apply(table, kind, text, Boolean(packet.retain), now) && !(this.floorShown() && FLOOR_IGNORES.has(kind))) {
      this.scheduleRender();
    }
  }

  // ---- alarm acknowledge ----

  // Publish {"alarm_id": N, "id": "<request id>"} on <prefix>/<table>/cmd/<role>/<user>/ack_alarm;
  // the table answers on .../ack_alarm/result with {"ok": true|false, "id": ..., "error": ...}.
  ack(table, alarmId, reason = null) {
    if (!this.client || !this.pit.connected || !Number.isInteger(alarmId)) return;
    const key = `${table}:${alarmId}`;
    if (this.pending.has(key)) return;
    const alarm = (this.pit.tables.get(table)?.alarms ?? []).find((a) => a.id === alarmId) ?? { id: alarmId };
    const role = this.ackRole(alarm);
    if (role === null) {
      this.showResult(table, false, `alarm ${alarmId}: a ${alarmKind(alarm)} alarm is acknowledged by ${this.clearedBy(alarm).join(" or ") || "nobody"}, not ${this.role}`);
      return;
    }
    if (this.needsReason(alarm, role) && !reason) {
      const why = alarm.integrity ? "an integrity alarm" : `${role}'s acknowledgement`;
      this.showResult(table, false, `alarm ${alarmId}: ${why} is given only with a reason: type it beside the button`);
      return;
    }
    this.requests = (this.requests ?? 0) + 1;
    const requestId = `${this.client.options.clientId}-${this.requests}`;
    const topic = `${this.cfg.prefix}/${table}/cmd/${role}/${this.operator()}/ack_alarm`;
    const entry = { table, alarmId, requestId, sentAt: Date.now(), timer: null };
    entry.timer = setTimeout(() => {
      if (this.pending.get(key) !== entry) return;
      this.pending.delete(key);
      const who = this.creds ? `user ${this.creds.username}` : "this dashboard";
      this.showResult(table, false, `alarm ${alarmId}: no answer within ${ACK_TIMEOUT_MS / 1000} s: not acknowledged (is the table online, and does ${who} hold the role ${role}? the broker drops a command it does not allow)`);
    }, ACK_TIMEOUT_MS);
    this.pending.set(key, entry);
    this.showResult(table, null, `alarm ${alarmId}: acknowledge sent\u2026`);
    const command = { alarm_id: alarmId, id: requestId };
    if (reason) command.reason = reason;
    this.client.publish(topic, JSON.stringify(command), { qos: 1 }, (err) => {
      if (!err) return;
      clearTimeout(entry.timer);
      this.pending.delete(key);
      this.showResult(table, false, `alarm ${alarmId}: not sent: ${err.message}`);
    });
    this.render();
  }

  // A pit command (open, close, set_limits) on <prefix>/<table>/cmd/<role>/<user>/<verb>; its answer,
  // matched by the request id, is shown under the buttons.
  send(table, verb, body) {
    const role = this.verbRole(verb);
    if (!this.client || !this.pit.connected || role === null) return;
    this.requests = (this.requests ?? 0) + 1;
    const requestId = `${this.client.options.clientId}-${this.requests}`;
    const entry = { table, verb, timer: null };
    entry.timer = setTimeout(() => {
      if (!this.commands.delete(requestId)) return;
      this.showCmdResult(table, false, `${verb}: no answer within ${ACK_TIMEOUT_MS / 1000} s (is the table online, and does ${this.operator()} hold the role ${role}?)`);
    }, ACK_TIMEOUT_MS);
    this.commands.set(requestId, entry);
    this.showCmdResult(table, null, `${verb}: sent\u2026`);
    const topic = `${this.cfg.prefix}/${table}/cmd/${role}/${this.operator()}/${verb}`;
    this.client.publish(topic, JSON.stringify({ ...body, id: requestId }), { qos: 1 }, (err) => {
      if (!err) return;
      clearTimeout(entry.timer);
      this.commands.delete(requestId);
      this.showCmdResult(table, false, `${verb}: not sent: ${err.message}`);
    });
  }

  showCmdResult(table, ok, text, now = Date.now()) {
    this.cmdResult.set(table, { ok, text, at: now });
    this.scheduleRender();
  }

  onResult(table, verb, text, now) {
    if (verb !== "ack_alarm") {
      const r = parseJson(text);
      const entry = r && typeof r === "object" ? this.commands.get(r.id) : undefined;
      if (!entry || entry.table !== table) return; // someone else's command
      clearTimeout(entry.timer);
      this.commands.delete(r.id);
      this.showCmdResult(table, r.ok === true, r.ok === true ? `${verb} accepted` : `${verb}: refused: ${r.error ?? ""}`, now);
      return;
    }
    const r = parseJson(text);
    const mine = [...this.pending.values()].filter((e) => e.table === table);
    if (!mine.length) return; // someone else's command
    let entry;
    if (r && typeof r === "object" && r.id !== undefined && r.id !== null) {
      entry = mine.find((e) => e.requestId === r.id); // matched by the echoed request id
    } else if (r && typeof r === "object" && Number.isInteger(r.alarm_id)) {
      entry = mine.find((e) => e.alarmId === r.alarm_id);
    } else {
      entry = mine[0]; // an answer without an id: the oldest request
    }
    if (!entry) return;
    clearTimeout(entry.timer);
    this.pending.delete(`${table}:${entry.alarmId}`);
    let ok;
    let detail;
    if (r && typeof r === "object") {
      ok = r.ok === true;
      detail = r.error ?? r.reason ?? "";
    } else {
      detail = text.trim();
      ok = /^ok\b/i.test(detail);
    }
    const msg = ok
      ? `alarm ${entry.alarmId} acknowledged`
      : `alarm ${entry.alarmId}: refused${detail ? ": " + detail : ""}`;
    this.showResult(table, ok, msg, now);
  }

  showResult(table, ok, text, now = Date.now()) {
    this.ackResult.set(table, { ok, text, at: now });
    this.scheduleRender();
  }

  // ---- drawing ----

  scheduleRender() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  render() {
    const now = Date.now();
    const conn = $("conn");
    conn.dataset.state = this.connState;
    conn.className = `conn conn-${this.connState}`;
    conn.textContent = this.connState === "connected" ? "live" : `${this.connState}${this.connDetail ? ": " + this.connDetail : ""}`;
    $("clock").textContent = new Date(now).toLocaleTimeString("en-GB", { hour12: false });
    const tableId = this.viewedTable();
    this.followHistory(tableId);
    const floor = tableId === null && this.floorShown();
    $("overview").hidden = tableId !== null || floor;
    $("floor").hidden = !floor;
    $("table").hidden = tableId === null;
    for (const [id, current] of [["nav-pit", tableId === null && !floor], ["nav-floor", floor]]) {
      $(id).classList.toggle("current", current);
      if (current) $(id).setAttribute("aria-current", "page");
      else $(id).removeAttribute("aria-current");
    }
    document.title = tableId ? `${tableId} \u00b7 Pit dashboard` : floor ? "Floor \u00b7 Pit dashboard" : "Pit dashboard";
    if (floor) this.floor.render(this.pit, now, this.cfg.staleMs, this.recorder);
    else if (tableId === null) this.renderOverview(now);
    else this.renderTable(tableId, now);
  }

  // ---- overview ----

  tileFacts(t, now) {
    const stale = staleness(this.pit, t, now, this.cfg.staleMs);
    const s = t.state ?? {};
    const alarms = activeAlarmCount(t);
    const due = deckDueS(t, now);
    const badDevices = Object.entries(s.devices ?? {}).filter(([, v]) => v !== "ok");
    const idle = stale ? null : idleS(t, now); // stale data says nothing about idleness
    const a = t.analytics;
    const zone = controlZone(a?.win_z);
    const duty = dealerOnDuty(t, now);
    return {
      id: t.id,
      status: t.status ?? "unknown",
      stale,
      seq: s.seq ?? null,
      phase: s.phase ?? null,
      halted: s.halted ?? null,
      round: s.round ?? null,
      rounds: s.totals?.rounds ?? null,
      alarms,
      alarmNames: alarms ? alarmNames(t) : null,
      deckId: s.deck_set?.id ?? null,
      deckAge: deckAgeS(t, now),
      due,
      pen: penetration(t),
      cut: Boolean(s.shoe?.cut_card_reached),
      hold: hold(t),
      limits: s.limits ?? null,
      badDevices,
      phaseAge: phaseAgeS(t, now),
      idle,
      // the dealer on duty, in whole minutes (the tile is redrawn once a minute for it, as for the deck's age)
      dealer: duty?.id ?? null,
      namesDealer: namesDealer(s),
      dealerMinutes: dutyMinutes(duty),
      dealerWaits: waitsForDealer(s),
      // what the hold bar shows (the whole analytics would redraw the tile at every settlement anyway)
      analytics: a ? { handle: a.handle, hold: a.hold, theoretical_hold: a.theoretical_hold, win_z: a.win_z, win_sd: a.win_sd, rounds: a.rounds, min_rounds: a.min_rounds } : null,
      zone,
      attention: (zone === "out" ? 1 : 0) + (stale ? 4 : 0) + (alarms ? 2 : 0) + (s.halted ? 2 : 0) + (due !== null && due < DECK_WARN_S ? 1 : 0) + (badDevices.length ? 1 : 0) + (idle !== null ? 1 : 0),
    };
  }

  renderOverview(now) {
    const filter = $("filter").value.trim().toLowerCase();
    const show = $("show").value;
    const sort = $("sort").value;
    const all = [...this.pit.tables.values()].map((t) => this.tileFacts(t, now));
    const shown = all.filter((f) => {
      if (filter && !`${f.id} ${f.phase ?? ""} ${f.status}${f.idle !== null ? " idle" : ""} ${f.dealer ?? (f.namesDealer ? "no dealer" : "")}`.toLowerCase().includes(filter)) return false;
      if (show === "online") return f.status === "online" && !f.stale;
      if (show === "offline") return Boolean(f.stale);
      if (show === "alarms") return f.alarms > 0;
      if (show === "attention") return f.attention > 0;
      return true;
    });
    const byId = (a, b) => a.id.localeCompare(b.id, "en", { numeric: true });
    const inf = Number.POSITIVE_INFINITY;
    const cmp = {
      table: byId,
      attention: (a, b) => b.attention - a.attention || byId(a, b),
      alarms: (a, b) => b.alarms - a.alarms || byId(a, b),
      deck: (a, b) => (a.due ?? inf) - (b.due ?? inf) || byId(a, b),
      penetration: (a, b) => (b.pen ?? -1) - (a.pen ?? -1) || byId(a, b),
      rounds: (a, b) => (b.rounds ?? -1) - (a.rounds ?? -1) || byId(a, b),
    }[sort] ?? byId;
    shown.sort(cmp);

    const box = $("tiles");
    const old = new Map([...box.children].map((el) => [el.dataset.table, el]));
    const order = [];
    for (const f of shown) {
      let tile = old.get(f.id);
      if (!tile) tile = h("a", { class: "tile", href: `#/${encodeURIComponent(f.id)}`, "data-table": f.id });
      old.delete(f.id);
      this.fillTile(tile, f);
      order.push(tile);
    }
    for (const el of old.values()) el.remove();
    order.forEach((el, i) => {
      if (box.children[i] !== el) box.insertBefore(el, box.children[i] ?? null);
    });
    $("empty").hidden = all.length > 0;
    const pit = pitTotals(this.pit.tables.values());
    renderIfChanged($("pitbar"), JSON.stringify(pit), () => pitBar(pit));
    $("pitbar").dataset.out = String(pit.out);
    const online = all.filter((f) => f.status === "online" && !f.stale).length;
    const alarmTables = all.filter((f) => f.alarms > 0).length;
    const idleTables = all.filter((f) => f.idle !== null).length;
    $("counts").textContent = `${shown.length} of ${all.length} tables \u00b7 ${online} live \u00b7 ${all.length - online} offline or stale \u00b7 ${alarmTables} with alarms${idleTables ? ` \u00b7 ${idleTables} idle` : ""}`;
  }

  fillTile(tile, f) {
    const cls = ["tile"];
    if (f.stale) cls.push("is-stale");
    if (f.status === "offline") cls.push("is-offline");
    if (f.alarms) cls.push("has-alarms");
    if (f.idle !== null) cls.push("is-idle");
    tile.className = cls.join(" ");
    tile.dataset.status = f.status;
    tile.dataset.idle = f.idle !== null ? "true" : "false";
    tile.dataset.stale = f.stale ? "true" : "false";
    tile.dataset.phase = f.phase ?? "";
    tile.dataset.alarms = String(f.alarms);
    tile.dataset.seq = String(f.seq ?? "");
    tile.dataset.zone = f.zone ?? "";
    // the time in phase ticks every second: written into its element below, not part of the key
    const key = JSON.stringify({ ...f, deckAge: Math.floor((f.deckAge ?? 0) / 60), due: f.due === null ? null : Math.floor(f.due / 60),
      phaseAge: f.phaseAge !== null, idle: f.idle === null ? null : Math.floor(f.idle / 60) });
    renderIfChanged(tile, key, () => {
      const badge = statusBadge(f.status, f.stale);
      const head = h("div", { class: "tile-head" }, h("span", { class: "tile-id", text: f.id }), badge);
      const phase = h("div", { class: "tile-phase" },
        h("span", { class: `phase phase-${f.phase ?? "none"}`, "data-field": "phase", text: f.phase ? label(f.phase) : "no state" }),
        f.phaseAge !== null ? h("span", { class: "phase-age muted", "data-field": "phase-age" }) : null,
        f.halted ? h("span", { class: "halted", text: `halted: ${label(f.halted)}` }) : null,
      );
      const idle = f.idle !== null ? h("div", { class: "idle-note", "data-field": "idle", text: idleText(f.phase, f.idle) }) : null;
      const duty = f.namesDealer ? dutyEl(f.dealer === null ? null : { id: f.dealer, ageS: f.dealerMinutes === null ? null : f.dealerMinutes * 60 }, f.dealerWaits) : null;
      const dueCls = f.due === null ? "" : f.due <= 0 ? "bad" : f.due < DECK_WARN_S ? "warn" : "";
      const rows = h("dl", { class: "tile-facts" },
        fact("Round", f.round ?? "\u2013", "round"),
        fact("Rounds played", f.rounds ?? "\u2013", "rounds"),
        fact("Alarms", f.alarms ? (f.alarmNames ?? String(f.alarms)) : "none", "alarms", f.alarms ? "bad" : ""),
        fact("Deck set", f.deckId === null ? "\u2013" : `${f.deckId} \u00b7 ${fmtDuration(f.deckAge)} old`, "deck"),
        fact("Deck change", f.due === null ? "\u2013" : f.due <= 0 ? `overdue ${fmtDuration(-f.due)}` : `in ${fmtDuration(f.due)}`, "deck-due", dueCls),
        // the state's totals count the wagers of a round in play; the bar below counts settled rounds only
        fact("Hold (with round in play)", f.hold === null ? "\u2013" : fmtPct(f.hold, 1), "hold"),
      );
      const pen = h("div", { class: "pen", title: "shoe penetration" },
        h("span", { class: "pen-label", text: "Shoe" }),
        h("span", { class: "pen-bar" }, h("span", { class: "pen-fill" + (f.cut ? " cut" : ""), style: `width:${Math.round((f.pen ?? 0) * 100)}%` })),
        h("span", { class: "pen-value", "data-field": "penetration", text: f.pen === null ? "\u2013" : fmtPct(f.pen) + (f.cut ? " cut card" : "") }),
      );
      const foot = [];
      if (f.stale && f.stale !== "offline") foot.push(h("div", { class: "stale-note", text: `stale: ${f.stale}` }));
      if (f.badDevices.length) foot.push(h("div", { class: "devices-bad", text: f.badDevices.map(([k, v]) => `${k} ${v}`).join(" \u00b7 ") }));
      if (f.limits) foot.push(h("div", { class: "limits muted", text: `limits ${fmtMoney(f.limits.min_bet)}\u2013${fmtMoney(f.limits.max_bet)}` }));
      return [head, phase, duty, idle, rows, pen, holdBar(f.analytics), ...foot];
    });
    setPhaseAge(tile, f.phaseAge);
  }

  // ---- one table ----

  renderTable(id, now) {
    const t = this.pit.tables.get(id) ?? null;
    const stale = t ? staleness(this.pit, t, now, this.cfg.staleMs) : "never heard of";
    const s = t?.state ?? null;
    const root = $("table");
    root.dataset.table = id;
    root.dataset.status = t?.status ?? "unknown";
    root.dataset.stale = stale ? "true" : "false";
    root.dataset.seq = s?.seq === undefined ? "" : String(s.seq);
    root.classList.toggle("is-stale", Boolean(stale));

    const phaseAge = t ? phaseAgeS(t, now) : null;
    const idle = t && !stale ? idleS(t, now) : null;
    root.dataset.idle = idle !== null ? "true" : "false";
    root.classList.toggle("is-idle", idle !== null);
    const duty = t ? dealerOnDuty(t, now) : null;
    const waits = waitsForDealer(s);
    const headKey = [id, t?.status, stale, s?.phase, s?.round, s?.halted, s?.seq, s?.awaiting, s?.insurance_open, phaseAge !== null, idle === null ? null : Math.floor(idle / 60),
      duty?.id ?? null, dutyMinutes(duty), waits, namesDealer(s)];
    renderIfChanged($("table-head"), JSON.stringify(headKey), () => [
      h("h1", { class: "table-title", text: id }),
      statusBadge(t?.status ?? "unknown", stale),
      s ? h("span", { class: `phase phase-${s.phase}`, "data-field": "phase", text: label(s.phase) }) : null,
      phaseAge !== null ? h("span", { class: "phase-age muted", "data-field": "phase-age" }) : null,
      idle !== null ? h("span", { class: "idle-note", "data-field": "idle", text: idleText(s?.phase, idle) }) : null,
      s?.round !== undefined ? h("span", { class: "muted", text: `round ${s.round}` }) : null,
      namesDealer(s) ? dutyEl(duty, waits, "Dealer on duty") : null,
      s ? h("span", { class: "muted mono", text: `seq ${s.seq}` }) : null,
      s?.insurance_open ? h("span", { class: "badge status-stale", "data-field": "insurance-open", text: "INSURANCE OPEN" }) : null,
      s?.awaiting ? h("span", { class: "muted", "data-field": "awaiting", text: `waiting for ${label(s.awaiting)}` }) : null,
      stale ? h("span", { class: "stale-note", "data-field": "stale", text: stale === "offline" ? "table offline: data below is the last known" : `stale: ${stale}` }) : null,
      s?.halted ? h("div", { class: "halted-banner", text: `Play halted: ${label(s.halted)}` }) : null,
    ]);
    setPhaseAge($("table-head"), phaseAge);

    renderIfChanged($("felt"), JSON.stringify([s?.seq, s?.spots, s?.dealer, s?.active, s?.phase]), () => this.felt(s));

    const due = t ? deckDueS(t, now) : null;
    const factsKey = JSON.stringify([s?.shoe, s?.deck_set?.id, s?.limits, s?.devices, s?.totals, t ? Math.floor((deckAgeS(t, now) ?? 0) / 60) : 0, due === null ? null : Math.floor(due / 60)]);
    renderIfChanged($("table-facts"), factsKey, () => this.facts(t, now));

    this.renderAnalytics(id, t?.analytics ?? null);

    const alarms = t?.alarms ?? [];
    const pendingIds = [...this.pending.values()].filter((e) => e.table === id).map((e) => e.alarmId);
    renderIfChanged($("alarms"), JSON.stringify([alarms, pendingIds, this.pit.connected, this.mayCommand()]), () => this.alarmList(id, alarms, pendingIds));
    const res = this.ackResult.get(id);
    const rp = $("ack-result");
    rp.hidden = !res;
    if (res) {
      rp.textContent = res.text;
      rp.className = "ack-result " + (res.ok === true ? "ok" : res.ok === false ? "bad" : "pending");
      rp.dataset.ok = String(res.ok);
    }

    $("pit-commands").hidden = this.verbRole("set_limits") === null;
    for (const b of ["limits-set", "cmd-close", "cmd-open"]) $(b).disabled = !this.pit.connected;
    const cres = this.cmdResult.get(id);
    const cp = $("cmd-result");
    cp.hidden = !cres;
    if (cres) {
      cp.textContent = cres.text;
      cp.className = "ack-result " + (cres.ok === true ? "ok" : cres.ok === false ? "bad" : "pending");
      cp.dataset.ok = String(cres.ok);
    }

    // the last round settled: as this page saw it settle, or from the table's retained history
    const rounds = Array.isArray(t?.history) ? t.history : [];
    const newest = rounds.length ? rounds[rounds.length - 1] : null;
    const settled = t?.lastSettled ?? null;
    const last = settled && (!newest || Number(settled.round) >= Number(newest.round)) ? settled : newest;
    renderIfChanged($("last-round"), JSON.stringify([settled?.seq ?? null, newest?.round ?? null, last === settled]), () => lastRound(last));
    $("history-count").textContent = rounds.length ? `(last ${rounds.length})` : "";
    renderIfChanged($("history"), JSON.stringify([id, t?.history === null || t?.history === undefined, rounds.map((r) => [r.round, r.seq])]), () => historyTable(t?.history ?? null));

    const evs = t?.events ?? [];
    $("event-count").textContent = evs.length ? `(last ${evs.filter((e) => !e.gap).length})` : "";
    // a late event filling a gap changes neither the length nor the last seq: the count still missing does
    const missing = evs.reduce((n, e) => n + (e.gap ?? 0), 0);
    renderIfChanged($("events"), JSON.stringify([evs.length, t?.lastEventSeq ?? null, missing]), () => eventItems(evs));
  }

  // The table's hold against theoretical: the chart, the figures and pace, shuffle scores, flagged spots.
  renderAnalytics(id, a) {
    const root = $("analytics");
    root.dataset.seq = a?.seq === undefined || a?.seq === null ? "" : String(a.seq);
    $("analytics-since").textContent = a?.opened_at ? `since the table opened at ${fmtTime(a.opened_at)}${a.closed_at ? `, closed at ${fmtTime(a.closed_at)}` : ""}` : "";
    this.chart.update(id, a);
    renderIfChanged($("analytics-figures"), JSON.stringify([id, a?.seq ?? null, a?.theoretical_win ?? null, a === null]), () => figures(a));
    renderIfChanged($("shuffle-scores"), JSON.stringify([id, a?.shuffle ?? null]), () => shuffleScores(a?.shuffle ?? null));
    renderIfChanged($("flags"), JSON.stringify([id, a?.flagged_spots ?? null]), () => flaggedSpots(a?.flagged_spots ?? null));
    renderIfChanged($("analytics-dealers"), JSON.stringify([id, a === null, a?.dealers ?? null, a?.min_rounds ?? null]), () => dealerFigures(a, dealerRows(a)));
  }

  felt(s) {
    const dealer = s?.dealer ?? {};
    const dcards = Array.isArray(dealer.cards) ? dealer.cards : [];
    const holeDown = dcards.some((c) => c === null);
    const dealerBox = h("div", { class: "dealer", id: "dealer", "data-hole": holeDown ? "down" : "up" },
      h("div", { class: "dealer-label", text: "Dealer" }),
      dcards.length ? cardsEl(dcards) : h("span", { class: "cards empty-cards" }),
      h("div", { class: "dealer-meta" },
        dcards.length ? h("span", { class: "total", "data-field": "dealer-total", text: `${dealer.total ?? ""}${holeDown ? " showing" : ""}` }) : null,
        dealer.blackjack === true ? h("span", { class: "badge outcome-blackjack", text: "Blackjack" }) : null,
        dealer.blackjack === false && holeDown ? h("span", { class: "muted", text: "peeked: no blackjack" }) : null,
      ),
    );
    const spots = h("div", { class: "spots" });
    for (let n = SPOTS; n >= 1; n--) spots.append(spotEl(n, s?.spots?.[String(n)] ?? null, s?.active ?? null));
    return [dealerBox, h("div", { class: "rail-text", text: s?.limits ? `Blackjack \u00b7 ${fmtMoney(s.limits.min_bet)} to ${fmtMoney(s.limits.max_bet)}` : "Blackjack" }), spots];
  }

  facts(t, now) {
    const s = t?.state;
    if (!s) return h("p", { class: "muted", text: "No state received for this table yet." });
    const pen = penetration(t);
    const due = deckDueS(t, now);
    const ho = hold(t);
    const dev = Object.entries(s.devices ?? {});
    return h("dl", { class: "facts-grid" },
      fact("Shoe", `${s.shoe?.cards_dealt ?? "\u2013"} cards dealt of ${s.shoe?.decks ?? "?"} decks \u00b7 ${fmtPct(pen)}${s.shoe?.cut_card_reached ? " \u00b7 cut card reached" : ""}`, "shoe"),
      fact("Deck set", s.deck_set ? `${s.deck_set.id ?? "?"} \u00b7 opened ${fmtDuration(deckAgeS(t, now))} ago` : "\u2013", "deck"),
      fact("Deck change", due === null ? "\u2013" : due <= 0 ? `overdue ${fmtDuration(-due)}` : `in ${fmtDuration(due)}`, "deck-due", due !== null && due <= 0 ? "bad" : due !== null && due < DECK_WARN_S ? "warn" : ""),
      fact("Profile", s.profile ?? "\u2013", "profile"),
      fact("Limits", s.limits ? `${fmtMoney(s.limits.min_bet)} \u2013 ${fmtMoney(s.limits.max_bet)}` : "\u2013", "limits"),
      fact("Rounds", s.totals?.rounds ?? "\u2013", "rounds"),
      // the engine's running handle counts a wager once it is in play; the analytics panel's, settled rounds only
      fact("Handle (round in play included)", s.totals ? fmtMoney(s.totals.handle) : "\u2013", "handle"),
      fact("House net", s.totals ? fmtMoney(s.totals.house_net, true) : "\u2013", "house-net"),
      fact("Hold", ho === null ? "\u2013" : fmtPct(ho, 2), "hold"),
      h("div", { class: "fact devices" }, h("dt", { text: "Devices" }), h("dd", {},
        dev.length ? dev.map(([k, v]) => h("span", { class: `device ${v === "ok" ? "ok" : "bad"}`, "data-device": k, text: `${k}: ${v}` })) : "\u2013")),
    );
  }

  alarmList(table, alarms, pendingIds) {
    if (!alarms.length) return h("p", { class: "muted", "data-field": "no-alarms", text: "No active alarms." });
    return h("ul", { class: "alarms" }, alarms.map((a) => {
      const id = Number.isInteger(a.id) ? a.id : Number.isInteger(a.alarm_id) ? a.alarm_id : null;
      const code = a.code ?? a.type ?? a.kind ?? "alarm";
      const text = a.message ?? a.text ?? a.reason ?? a.detail ?? "";
      const acked = a.acknowledged === true || a.acked === true;
      const pending = id !== null && pendingIds.includes(id);
      const when = fmtTime(a.raised_at ?? a.ts ?? a.since);
      const sev = String(a.severity ?? (a.halts ? "halt" : "warning"));
      let button = null;
      let reason = null;
      const role = id === null ? null : this.ackRole(a);
      if (role === null && this.mayCommand() && id !== null) {
        button = h("span", { class: "muted ack-by", "data-field": "ack-by", text: `acknowledged by ${this.clearedBy(a).join(" or ") || "nobody"}` });
      }
      if (role !== null) {
        if (this.needsReason(a, role)) {
          reason = h("input", { class: "ack-reason", "data-reason": String(id), maxlength: "200", disabled: acked || pending || null,
            placeholder: a.integrity && a.halts ? "reason (required: this alarm halts for integrity)"
              : a.integrity ? "reason (required: an integrity alarm)" : `reason (required: ${role} gives one)`,
            "aria-label": `reason for acknowledging alarm ${id}` });
        }
        button = h("button", {
          type: "button", class: "ack", "data-ack": String(id), "data-table": table,
          disabled: acked || pending || !this.pit.connected,
          text: acked ? "Acknowledged" : pending ? "Sending\u2026" : "Acknowledge",
        });
      }
      return h("li", { class: `alarm sev-${sev}${acked ? " acked" : ""}`, "data-alarm": id === null ? "" : String(id), "data-code": String(code) },
        h("div", { class: "alarm-head" },
          h("span", { class: "alarm-code", text: label(code) }),
          id !== null ? h("span", { class: "muted mono", text: `#${id}` }) : null,
          a.halts ? h("span", { class: "badge bad", text: "halts play" }) : null,
          when ? h("span", { class: "muted", text: when }) : null),
        text ? h("div", { class: "alarm-text", text: String(text) }) : null,
        reason,
        button);
    }));
  }
}

// ---- view pieces -----------------------------------------------------------------------

// The time in phase ("for 12 s"), rewritten at every render (each second) without a rebuild.
function setPhaseAge(box, ageS) {
  const el = box.querySelector('[data-field="phase-age"]');
  if (!el || ageS === null) return;
  const text = `for ${fmtAge(ageS)}`;
  if (el.textContent !== text) el.textContent = text;
  el.dataset.seconds = String(Math.floor(ageS));
}

function statusBadge(status, stale) {
  let text = status;
  let cls = "badge status-" + status;
  if (status !== "offline" && stale) {
    text = "stale";
    cls = "badge status-stale";
  }
  return h("span", { class: cls, "data-field": "status", text: text.toUpperCase() });
}

function fact(name, value, field, cls = "") {
  return h("div", { class: "fact" }, h("dt", { text: name }), h("dd", { class: cls, "data-field": field, text: String(value) }));
}

function spotEl(n, spot, active) {
  const hands = Array.isArray(spot?.hands) ? spot.hands : [];
  const el = h("div", { class: "spot" + (hands.length ? " occupied" : ""), "data-spot": String(n), "data-occupied": hands.length ? "true" : "false" },
    h("div", { class: "spot-label", text: n === 1 ? "1 \u00b7 first base" : n === SPOTS ? `${n} \u00b7 third base` : String(n) }));
  if (!hands.length) {
    el.append(h("div", { class: "spot-ring", text: "open" }));
    const rated = ratingEl(spot?.rating);
    if (rated) el.append(rated);
    return el;
  }
  hands.forEach((hand, i) => {
    const isActive = active && Number(active.spot) === n && Number(active.hand) === i;
    const out = hand.outcome ?? null;
    el.append(h("div", { class: "hand" + (isActive ? " active" : ""), "data-hand": String(i) },
      cardsEl(hand.cards),
      h("div", { class: "hand-meta" },
        h("span", { class: "total", "data-field": "total", text: hand.cards?.length ? `${hand.soft ? "soft " : ""}${hand.total ?? ""}` : "" }),
        h("span", { class: "chip wager", "data-field": "wager", "data-amount": String(hand.wager ?? ""), text: fmtMoney(hand.wager) })),
      h("div", { class: "hand-status" },
        hand.status && !out ? h("span", { class: `hstatus hstatus-${hand.status}`, text: label(hand.status) }) : null,
        out ? h("span", { class: `badge outcome-${out}`, "data-field": "outcome", text: label(out) }) : null,
        hand.payout !== null && hand.payout !== undefined ? h("span", { class: "payout " + moneyCls(hand.payout), "data-field": "payout", text: fmtMoney(hand.payout, true) }) : null),
    ));
  });
  const ins = spot.insurance;
  if (ins && typeof ins === "object") {
    el.append(h("div", { class: "insurance", "data-field": "insurance" },
      h("span", { text: "Insurance " }),
      h("span", { class: "chip small", text: fmtMoney(ins.wager) }),
      ins.payout !== null && ins.payout !== undefined ? h("span", { class: "payout " + moneyCls(ins.payout), text: " " + fmtMoney(ins.payout, true) }) : null));
  }
  const rated = ratingEl(spot.rating);
  if (rated) el.append(rated);
  return el;
}

// A rated spot (state.spots[n].rating, docs/ratings.md): the player's masked card number, time, average bet and
// theo so far (the industry's and the skill-aware one). The table never puts the full number in state.
function ratingEl(r) {
  if (!r || typeof r !== "object" || r.rated !== true) return null;
  const minutes = Number(r.minutes);
  return h("div", { class: "rating", "data-field": "rating", "data-player": String(r.player ?? "") },
    h("div", { class: "rated-player", "data-field": "rated-player", text: `\u2605 ${r.player ?? ""}` }),
    h("div", { class: "rated-figures" },
      h("span", { "data-field": "rated-time", text: Number.isFinite(minutes) ? fmtMinutes(minutes * 60) : "\u2013" }),
      h("span", { "data-field": "average-bet", text: `avg ${fmtMoney(r.average_bet)}` })),
    h("div", { class: "rated-figures" },
      h("span", { "data-field": "theo", text: `theo ${fmtMoney(r.theoretical_loss)}` }),
      h("span", { "data-field": "skill-theo", title: "theo with the cost of each departure from basic strategy", text: `skill ${fmtMoney(r.skill_theoretical_loss)}` })));
}

function moneyCls(v) {
  const c = parseMoney(v);
  return c === null || c === 0 ? "zero" : c > 0 ? "pos" : "neg";
}

function spotNet(spot) {
  if (spot.net !== undefined && spot.net !== null) return parseMoney(spot.net);
  let c = 0;
  for (const hand of spot.hands ?? []) c += parseMoney(hand.payout) ?? 0;
  c += parseMoney(spot.insurance?.payout) ?? 0;
  return c;
}

function lastRound(s) {
  if (!s) return h("p", { class: "muted", text: "No round settled since this page opened." });
  const rows = Object.entries(s.spots ?? {}).sort((a, b) => Number(a[0]) - Number(b[0]));
  const d = s.dealer ?? {};
  return h("div", { class: "last-round", "data-round": String(s.round ?? "") },
    h("div", { class: "lr-dealer" }, h("span", { class: "muted", text: `Round ${s.round ?? "?"} \u00b7 dealer ` }), cardsEl(d.cards, { small: true }),
      h("span", { class: "total", text: ` ${d.total ?? ""}${d.blackjack ? " blackjack" : ""}` })),
    h("table", { class: "lr-table" },
      h("thead", {}, h("tr", {}, ["Spot", "Hand", "Wager", "Outcome", "Payout"].map((x) => h("th", { text: x })))),
      h("tbody", {}, rows.flatMap(([n, spot]) => {
        const trs = (spot.hands ?? []).map((hand, i) => h("tr", { "data-spot": n, "data-hand": String(i) },
          h("td", { text: i === 0 ? n : "" }),
          h("td", {}, cardsEl(hand.cards, { small: true }), h("span", { class: "muted", text: ` ${hand.total ?? ""}` })),
          h("td", { text: fmtMoney(hand.wager) }),
          h("td", {}, hand.outcome ? h("span", { class: `badge outcome-${hand.outcome}`, text: label(hand.outcome) }) : "\u2013"),
          h("td", { class: "num " + moneyCls(hand.payout), text: fmtMoney(hand.payout, true) })));
        if (spot.insurance) {
          trs.push(h("tr", { class: "lr-ins" }, h("td"), h("td", { text: "insurance" }), h("td", { text: fmtMoney(spot.insurance.wager) }), h("td"),
            h("td", { class: "num " + moneyCls(spot.insurance.payout), text: fmtMoney(spot.insurance.payout, true) })));
        }
        const net = spotNet(spot);
        trs.push(h("tr", { class: "lr-net" }, h("td"), h("td", { text: "net" }), h("td"), h("td"),
          h("td", { class: "num " + (net > 0 ? "pos" : net < 0 ? "neg" : "zero"), "data-field": "net", text: fmtMoney(String(net / 100), true) })));
        return trs;
      }))));
}

// The table's last settled rounds (its retained `history`), newest first: round, time, who dealt it (its
// `dealer_id`, when the table names its dealers), the dealer's cards and total, each spot's net.
function historyTable(rounds) {
  if (rounds === null) return h("p", { class: "muted", "data-field": "no-history", text: "Waiting for the table's round history\u2026" });
  if (!rounds.length) return h("p", { class: "muted", "data-field": "no-history", text: "No round settled yet." });
  const dealt = rounds.some((r) => roundDealer(r).named);
  return h("table", { class: "lr-table history-table" },
    h("thead", {}, h("tr", {}, ["Round", "Time", dealt ? "Dealt by" : null, "Dealer", "Spots (net)"].filter(Boolean).map((x) => h("th", { text: x })))),
    h("tbody", {}, [...rounds].reverse().map((r) => {
      const d = r.dealer ?? {};
      const spots = Object.entries(r.spots ?? {}).sort((a, b) => Number(a[0]) - Number(b[0]));
      return h("tr", { "data-round": String(r.round ?? "") },
        h("td", { class: "mono", "data-field": "round", text: String(r.round ?? "?") }),
        h("td", { class: "mono muted", "data-field": "time", text: fmtTime(r.ended ?? r.ended_at) }),
        dealt ? dealtBy(r) : null,
        h("td", { "data-field": "dealer" }, cardsEl(d.cards, { small: true }),
          h("span", { class: "total", "data-field": "dealer-total", text: ` ${d.total ?? ""}${d.blackjack ? " BJ" : ""}` })),
        h("td", { "data-field": "nets" }, spots.map(([n, spot]) => {
          const net = spotNet(spot);
          return h("span", { class: "h-net " + (net > 0 ? "pos" : net < 0 ? "neg" : "zero"), "data-spot": n, "data-net": String(spot.net ?? ""),
            text: `${n}: ${fmtMoney(String(net / 100), true)}` });
        })));
    })));
}

const EVENT_SKIP = new Set(["seq", "ts", "type", "table_id"]);

function eventItems(evs) {
  if (!evs.length) return h("li", { class: "muted no-events", text: "No events since this page opened (events are not retained)." });
  const items = [];
  for (let i = evs.length - 1; i >= 0; i--) {
    const e = evs[i];
    if (e.gap) {
      items.push(h("li", { class: "gap", text: `\u2026 ${e.gap} event${e.gap > 1 ? "s" : ""} not received` }));
      continue;
    }
    const details = h("span", { class: "ev-details" });
    for (const [k, v] of Object.entries(e)) {
      const faceDown = k === "card" && v === null; // a card dealt face down (the hole card, a burn card)
      if (EVENT_SKIP.has(k) || v === undefined || (v === null && !faceDown)) continue; // "player null" says nothing
      const item = h("span", { class: "ev-kv" }, h("span", { class: "muted", text: `${label(k)} ` }));
      if (isCardCode(v) || faceDown) item.append(cardEl(v, { small: true }));
      else if (Array.isArray(v) && v.length && v.every((c) => isCardCode(c) || c === null)) item.append(cardsEl(v, { small: true }));
      else item.append(typeof v === "object" ? readable(v) : String(v));
      details.append(item);
    }
    items.push(h("li", { "data-seq": String(e.seq ?? ""), "data-type": String(e.type ?? "") },
      h("span", { class: "ev-seq mono", text: e.seq !== undefined ? `#${e.seq}` : "" }),
      h("span", { class: "ev-time mono muted", text: fmtTime(e.ts) }),
      h("span", { class: "ev-type", text: label(e.type ?? "?") }),
      details));
  }
  return items;
}

// ---- boot ------------------------------------------------------------------------------

async function main() {
  if (typeof mqtt === "undefined") {
    const c = $("conn");
    c.className = "conn conn-error";
    c.dataset.state = "error";
    c.textContent = "mqtt.min.js not loaded: put node_modules/mqtt/dist/mqtt.min.js beside index.html";
    return;
  }
  const app = new App(await loadConfig());
  window.pitDashboard = app; // for debugging from the console
  app.start();
}

main();
