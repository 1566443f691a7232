// LangGraph.js side of cairn's long-conversation comparison
// (docs/PERFORMANCE.md, "cairn and LangGraph.js: a long conversation").
//
// The conversation of conversation.js runs through a StateGraph over
// MessagesAnnotation (the messages reducer): a fake model node, a ToolNode
// and toolsCondition between them, compiled with SqliteSaver (a file) or
// PostgresSaver, one invoke per turn with the thread's ID. It prints one
// JSON document: the p50 of a turn's latency at 10, 100 and 1,000 turns,
// the bytes stored, and the time to load the thread in fresh processes.
//
//	node bench.js run --store sqlite --path /some/dir/lg.db [--synchronous default|full|normal]
//	node bench.js run --store postgres --postgres URL [--schema bench_langgraph]
//	node bench.js load ...   (a child of run: loads the thread, prints its timing)
//
// --turns (1000) sets the conversation's length, --loads (3) the fresh
// processes that load it, --latencies adds every turn's latency to the
// output, --keep keeps the PostgreSQL schema.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { AIMessage, HumanMessage, SystemMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import pg from "pg";
import { z } from "zod";

import { INSTRUCTIONS, TOOL, callID, conversationSum, messagesAfter, text, turnOf } from "./conversation.js";

const MARKS = [10, 100, 1000];
const WINDOW = 20; // turns ending at each mark whose median is that mark's p50
const THREAD = "long-conversation";

// The fake model: it answers the last message. A user message of turn n
// gets the answer of turn n, or, every third turn, a call of the tool; a
// tool result gets the answer of its turn.
function model(state) {
  const last = state.messages[state.messages.length - 1];
  const n = turnOf(String(last.content));
  if (last.getType() === "human" && n % 3 === 0) {
    return { messages: [new AIMessage({ content: "", tool_calls: [{ id: callID(n), name: TOOL, args: { turn: n }, type: "tool_call" }] })] };
  }
  return { messages: [new AIMessage(text("answer", n))] };
}

const lookup = tool(async ({ turn }) => text("result", turn), {
  name: TOOL,
  description: "Looks up what the conversation needs at a turn.",
  schema: z.object({ turn: z.number().int() }),
});

function graph() {
  return new StateGraph(MessagesAnnotation)
    .addNode("model", model)
    .addNode("tools", new ToolNode([lookup]))
    .addEdge(START, "model")
    .addConditionalEdges("model", toolsCondition, ["tools", END])
    .addEdge("tools", "model");
}

// saver opens the checkpointer the options name, with the durability they ask.
async function saver(o) {
  if (o.store === "sqlite") {
    const db = new Database(o.path);
    const sync = o.synchronous.toLowerCase();
    if (sync !== "default") {
      // SqliteSaver turns WAL on in setup(); a synchronous set
      // explicitly before stays as set (SQLite's default for WAL files,
      // which better-sqlite3 builds as NORMAL, applies only to a
      // connection that never set it).
      db.pragma("journal_mode = WAL");
      db.pragma(`synchronous = ${sync === "full" ? "FULL" : "NORMAL"}`);
    }
    return { saver: new SqliteSaver(db), db, close: async () => db.close() };
  }
  if (o.store === "postgres") {
    const s = PostgresSaver.fromConnString(o.postgres, { schema: o.schema });
    if (o.setup) await s.setup(); // creates the schema's tables (the loads find them made)
    return { saver: s, close: async () => s.end() };
  }
  throw new Error(`--store ${JSON.stringify(o.store)}: want sqlite or postgres`);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const round3 = (x) => Math.round(x * 1000) / 1000;

function versions() {
  const require = createRequire(import.meta.url);
  const v = {};
  for (const p of ["@langchain/langgraph", "@langchain/langgraph-checkpoint", "@langchain/langgraph-checkpoint-sqlite",
    "@langchain/langgraph-checkpoint-postgres", "@langchain/core", "better-sqlite3", "pg"]) {
    const dir = path.dirname(require.resolve(`${p}/package.json`));
    v[p] = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version;
  }
  v.node = process.versions.node;
  return v;
}

async function dropSchema(url, schema) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`DROP SCHEMA IF EXISTS "${schema.replaceAll('"', '""')}" CASCADE`);
  } finally {
    await c.end();
  }
}

async function postgresBytes(url, schema) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query(
      `SELECT c.relname, pg_total_relation_size(c.oid)::bigint AS bytes
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY c.relname`, [schema]);
    const tables = Object.fromEntries(r.rows.map((x) => [x.relname, Number(x.bytes)]));
    const server = (await c.query(`SELECT current_setting('server_version') AS v, current_setting('synchronous_commit') AS s, current_setting('fsync') AS f`)).rows[0];
    return { bytes: Object.values(tables).reduce((a, b) => a + b, 0), tables, server };
  } finally {
    await c.end();
  }
}

async function run(o) {
  const turns = Number(o.turns);
  if (!Number.isInteger(turns) || turns < 1) throw new Error(`--turns ${o.turns}: want a whole number of at least 1`);
  if (o.store === "sqlite") {
    for (const f of [o.path, o.path + "-wal", o.path + "-shm"]) fs.rmSync(f, { force: true });
  } else if (o.store === "postgres") {
    await dropSchema(o.postgres, o.schema);
  }
  const s = await saver({ ...o, setup: true });
  const app = graph().compile({ checkpointer: s.saver });
  const cfg = { configurable: { thread_id: THREAD } };
  const lat = [];
  const t0 = performance.now();
  for (let n = 1; n <= turns; n++) {
    const input = [new HumanMessage(text("user", n))];
    if (n === 1) input.unshift(new SystemMessage(INSTRUCTIONS));
    const a = performance.now();
    const out = await app.invoke({ messages: input }, cfg);
    lat.push(performance.now() - a);
    const last = out.messages[out.messages.length - 1];
    if (last.content !== text("answer", n)) throw new Error(`turn ${n}: the last message is not the answer of turn ${n}`);
  }
  const runSeconds = (performance.now() - t0) / 1000;
  const res = {
    system: "langgraph.js",
    versions: versions(),
    store: o.store,
    turns,
    messages: messagesAfter(turns),
    conversation_sha256: conversationSum(turns),
    run_seconds: round3(runSeconds),
    turn_p50_ms: {},
    tool_turn_p50_ms: {},
    windows: {},
  };
  for (const m of MARKS.filter((m) => m <= turns)) {
    const from = Math.max(1, m - WINDOW + 1);
    const w = lat.slice(from - 1, m);
    res.windows[m] = [from, m];
    res.turn_p50_ms[m] = round3(median(w));
    res.tool_turn_p50_ms[m] = round3(median(w.filter((_, i) => (from + i) % 3 === 0)));
  }
  if (o.store === "sqlite") {
    const sync = s.db.pragma("synchronous", { simple: true });
    res.durability = {
      journal_mode: s.db.pragma("journal_mode", { simple: true }),
      synchronous: ["OFF", "NORMAL", "FULL", "EXTRA"][sync] ?? String(sync),
      commits: "one per checkpoint put and one per putWrites",
    };
    res.versions.sqlite = s.db.prepare("SELECT sqlite_version() AS v").get().v;
    s.db.pragma("wal_checkpoint(TRUNCATE)");
    await s.close();
    const size = (f) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
    res.bytes_stored = size(o.path) + size(o.path + "-wal");
    res.bytes_detail = { db: size(o.path), wal: size(o.path + "-wal") };
  } else {
    await s.close();
    const b = await postgresBytes(o.postgres, o.schema);
    res.bytes_stored = b.bytes;
    res.bytes_detail = b.tables;
    res.versions.postgresql = b.server.v;
    res.durability = {
      synchronous_commit: b.server.s,
      fsync: b.server.f,
      commits: "one transaction per checkpoint put and one per putWrites",
    };
  }
  if (o.latencies) res.latencies_ms = lat.map(round3);
  res.load = loads(o, turns);
  if (o.store === "postgres" && !o.keep) await dropSchema(o.postgres, o.schema);
  return res;
}

// loads times o.loads fresh processes that each load the thread: the
// process's own figure (opening the store to holding the messages) and the
// wall time of the whole process as this one sees it.
function loads(o, turns) {
  const self = fileURLToPath(import.meta.url);
  const args = [self, "load", "--store", o.store, "--turns", String(turns)];
  if (o.store === "sqlite") args.push("--path", o.path);
  else args.push("--postgres", o.postgres, "--schema", o.schema);
  const runs = [];
  for (let i = 0; i < Number(o.loads); i++) {
    const a = performance.now();
    const c = spawnSync(process.execPath, args, { encoding: "utf8" });
    const wall = performance.now() - a;
    if (c.status !== 0) throw new Error(`load process: exit ${c.status}: ${c.stderr}`);
    const r = JSON.parse(c.stdout);
    runs.push({ load_ms: r.load_ms, process_ms: round3(wall) });
  }
  return {
    load_ms: round3(median(runs.map((r) => r.load_ms))),
    process_ms: round3(median(runs.map((r) => r.process_ms))),
    runs,
  };
}

async function load(o) {
  const builder = graph();
  const a = performance.now();
  const s = await saver({ ...o, synchronous: "default" });
  const app = builder.compile({ checkpointer: s.saver });
  const st = await app.getState({ configurable: { thread_id: THREAD } });
  const ms = performance.now() - a;
  const msgs = st.values.messages ?? [];
  await s.close();
  const turns = Number(o.turns);
  if (msgs.length !== messagesAfter(turns)) throw new Error(`loaded ${msgs.length} messages, want ${messagesAfter(turns)}`);
  if (msgs[msgs.length - 1].content !== text("answer", turns)) throw new Error(`the last message loaded is not the answer of turn ${turns}`);
  return { load_ms: round3(ms), messages: msgs.length };
}

async function main() {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      store: { type: "string", default: "sqlite" },
      path: { type: "string", default: "langgraph.db" },
      synchronous: { type: "string", default: "default" },
      postgres: { type: "string", default: process.env.CAIRN_TEST_POSTGRES ?? "postgres://postgres@127.0.0.1:5432/test" },
      schema: { type: "string", default: "bench_langgraph" },
      turns: { type: "string", default: "1000" },
      loads: { type: "string", default: "3" },
      keep: { type: "boolean", default: false },
      latencies: { type: "boolean", default: false },
    },
  });
  if (!["default", "full", "normal"].includes(values.synchronous.toLowerCase())) {
    throw new Error(`--synchronous ${values.synchronous}: want default, full or normal`);
  }
  const cmd = positionals[0];
  let out;
  if (cmd === "run") out = await run(values);
  else if (cmd === "load") out = await load(values);
  else throw new Error(`command ${JSON.stringify(cmd)}: want run or load`);
  process.stdout.write(JSON.stringify(out, null, 2) + "\n");
}

main().catch((e) => {
  process.stderr.write(`langgraph bench: ${e.stack ?? e}\n`);
  process.exit(1);
});
