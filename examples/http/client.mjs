// A TypeScript/JavaScript agent that keeps its memory in cairn over HTTP
// (Node 18 or later: fetch is built in; no packages).
//
// Start a server first:  cairn serve            (it prints the address and a token)
// Then:                  CAIRN_URL=http://127.0.0.1:7420 CAIRN_TOKEN=... node client.mjs [SESSION_ID]
//
// The same code runs as TypeScript once the types below are added; see
// docs/SERVER.md for the shapes (or /api/openapi.json).
import { randomUUID } from "node:crypto";
import assert from "node:assert/strict";

const URL = (process.env.CAIRN_URL ?? "http://127.0.0.1:7420").replace(/\/$/, "");
const TOKEN = process.env.CAIRN_TOKEN;
const headers = { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" };

class CairnError extends Error {
  constructor(status, error) {
    super(`${status} ${error.code}: ${error.message}`);
    Object.assign(this, { status, code: error.code, field: error.field, lastSeq: error.last_seq });
  }
}

async function call(method, path, body) {
  const res = await fetch(URL + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const data = text ? JSON.parse(text) : null;
  if (!res.ok) throw new CairnError(res.status, data.error);
  return data;
}

// One session's events, appended with the seq the writer expects.
class Memory {
  static async open(id) {
    const m = new Memory();
    m.id = id;
    try {
      m.seq = (await call("POST", "/api/sessions", { id, labels: { lang: "javascript" } })).session.last_seq;
    } catch (e) {
      if (e.code !== "exists") throw e;
      m.seq = (await call("GET", `/api/sessions/${id}`)).session.last_seq;
    }
    return m;
  }

  async append(...events) {
    // Each event carries its time: the same append sent again after a lost
    // reply is recognised as done (200, nothing written twice).
    const at = new Date().toISOString();
    events = events.map((e) => ({ ...e, at }));
    for (let i = 0; i < 3; i++) {
      try {
        this.seq = (await call("POST", `/api/sessions/${this.id}/events`, { expect_seq: this.seq, events })).last_seq;
        return;
      } catch (e) {
        if (e.code !== "conflict") throw e;
        // Someone appended first: catch up, then decide again.
        const missed = (await call("GET", `/api/sessions/${this.id}/events?after=${this.seq}`)).events;
        console.log(`conflict at seq ${this.seq}: ${missed.length} event(s) appended meanwhile, last seq ${e.lastSeq}`);
        this.seq = e.lastSeq;
      }
    }
    throw new Error("too many conflicts");
  }

  async state() {
    return (await call("GET", `/api/sessions/${this.id}/state`)).state;
  }
}

const user = (text) => ({ kind: "message.user", data: { parts: [{ type: "text", text }] } });
const think = (run, text, calls = []) => ({
  kind: "model.response", run,
  data: { text, tool_calls: calls, model: "my-model", finish_reason: calls.length ? "tool_calls" : "stop",
    usage: { input_tokens: 42, output_tokens: 7 }, latency_ms: 120 },
});

const sid = process.argv[2] ?? `js-${randomUUID().slice(0, 12)}`;
const mem = await Memory.open(sid);
const run = randomUUID();
await mem.append(
  { kind: "run.started", run, data: { run_id: run, agent: "js-agent", model: "my-model", reset: true,
    fingerprint: { model: "my-model", instructions: "", tools: "" } } },
  { kind: "memory.reset", run, data: {} },
  user("What is 6*7? Remember the answer."),
);
await mem.append(think(run, "", [{ id: "call_1", name: "calc", args: { expression: "6*7" } }]));
await mem.append(
  { kind: "tool.result", run, data: { call_id: "call_1", name: "calc", output: "42", is_error: false, duration_ms: 1 } },
  { kind: "state.set", run, data: { set: { answer: 42 }, deleted: [] } },
);

// Another writer appends first.
const other = (await call("GET", `/api/sessions/${sid}`)).session.last_seq;
await call("POST", `/api/sessions/${sid}/events`, { expect_seq: other, events: [
  { kind: "custom", run, data: { type: "example.note", payload: { from: "another writer" } } }] });

await mem.append(think(run, "6*7 = 42; I will remember it."),
  { kind: "run.finished", run, data: { status: "completed", output: "6*7 = 42" } });

// A bad event is refused with the field at fault; nothing is written.
try {
  await mem.append({ kind: "message.user", data: { parts: [{ type: "text", text: 42 }] } });
} catch (e) {
  console.log(`refused: ${e.status} ${e.code} at ${e.field}`);
}

const st = await mem.state();
console.log(`session ${sid}: status ${st.status}, ${st.messages.length} messages, answer=${st.variables.answer}, last seq ${st.last_seq}`);
assert.equal(st.status, "completed");
assert.equal(st.variables.answer, 42);
assert.equal(st.last_seq, mem.seq);

// The events as server-sent events, from a seq (as a reconnect with Last-Event-ID would).
const ac = new AbortController();
const res = await fetch(`${URL}/api/sessions/${sid}/stream`, {
  headers: { Authorization: `Bearer ${TOKEN}`, "Last-Event-ID": String(mem.seq - 2) }, signal: ac.signal });
const got = [];
let buf = "";
const decoder = new TextDecoder();
for await (const chunk of res.body) {
  buf += decoder.decode(chunk, { stream: true });
  let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    if (line.startsWith("data: ")) got.push(JSON.parse(line.slice(6)).kind);
  }
  if (got.length >= 2) break;
}
ac.abort();
console.log("streamed:", got.join(", "));
assert.deepEqual(got.slice(0, 2), ["model.response", "run.finished"]);
