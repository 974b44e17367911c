// The central recorder as the floor page shows it: its retained alarms (<prefix>/recorder/alarms, a JSON list of
// {table_id, code, from_seq, to_seq, message, ts}) and its position of each table (<prefix>/recorder/<table_id>,
// {table_id, seq, journal_id, head_seq, head, ts}), as controller/recorder/board.py publishes them.
//
// Pure (no DOM, no MQTT). A gap means the recorder holds events beyond missing seqs; a conflict, a second body at
// a seq it holds: both are the pit's to see, so the floor page puts them first. Nothing received yet says "no
// recorder seen": a floor without a recorder is not a floor whose record is complete.

import { RECORDER, parseJson } from "./model.js";

// The recorder's topic under `prefix`: "alarms", a table id (its position), or null when not the recorder's.
export function recorderTopic(prefix, topic) {
  const head = `${prefix}/${RECORDER}/`;
  if (!topic.startsWith(head)) return null;
  const name = topic.slice(head.length);
  return name && !name.includes("/") ? name : null;
}

const isSeq = (x) => Number.isInteger(x) && x >= 0;

function alarmOf(a) {
  if (!a || typeof a !== "object" || typeof a.table_id !== "string" || !a.table_id) return null;
  if (!isSeq(a.from_seq) || !isSeq(a.to_seq)) return null;
  return {
    table: a.table_id,
    code: typeof a.code === "string" ? a.code : "recorder_alarm",
    from: a.from_seq,
    to: a.to_seq,
    message: typeof a.message === "string" ? a.message : "",
    ts: typeof a.ts === "number" && Number.isFinite(a.ts) ? a.ts : null,
  };
}

export class RecorderRecord {
  constructor() {
    this.alarms = null; // null: no alarms list received; else the active ones
    this.positions = new Map(); // table id -> {seq, headSeq, ts}
  }

  // File one message of the recorder's; true when what the page shows of it changed.
  apply(name, text) {
    if (name === "alarms") {
      if (!text) {
        const had = this.alarms !== null;
        this.alarms = null; // a cleared retained list
        return had;
      }
      const list = parseJson(text);
      if (!Array.isArray(list)) return false;
      this.alarms = list.map(alarmOf).filter(Boolean);
      return true;
    }
    if (!text) return this.positions.delete(name);
    const p = parseJson(text);
    if (!p || typeof p !== "object" || Array.isArray(p) || !isSeq(p.seq)) return false;
    this.positions.set(name, {
      seq: p.seq,
      headSeq: isSeq(p.head_seq) ? p.head_seq : null,
      ts: typeof p.ts === "number" && Number.isFinite(p.ts) ? p.ts : null,
    });
    return true;
  }
}

// What the page shows: the status for the floor totals, the tables recorded and the latest position's time,
// and the alarms (gaps and conflicts) by table then seq.
export function recorderSummary(rec) {
  const alarms = [...(rec.alarms ?? [])].sort((a, b) =>
    a.table.localeCompare(b.table, "en", { numeric: true }) || a.from - b.from || a.code.localeCompare(b.code));
  const seen = rec.alarms !== null || rec.positions.size > 0;
  let last = null;
  for (const p of rec.positions.values()) if (p.ts !== null && (last === null || p.ts > last)) last = p.ts;
  return {
    status: !seen ? "unseen" : alarms.length ? "alarms" : "ok",
    tables: rec.positions.size,
    lastTs: last,
    alarms,
  };
}

// "seq 3" or "seqs 3 to 9"
export function seqText(from, to) {
  return from === to ? `seq ${from}` : `seqs ${from} to ${to}`;
}
