// An MCP client on the TypeScript SDK, for TestMCPServe_TypeScriptClient:
// node mcpclient.mjs SDK_DIR COMMAND ARGS... starts COMMAND ARGS as an MCP
// server on stdio, lists its tools, saves a memory and searches for it,
// printing one line per fact checked.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, command, ...args] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(sdkDir, "dist", "esm", p)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");

const client = new Client({ name: "cairn-ts-test", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" }));
console.log("server", client.getServerVersion().name);

const { tools } = await client.listTools();
console.log("tools", tools.map((t) => t.name).sort().join(" "));
for (const t of tools) {
  const a = t.annotations ?? {};
  console.log(t.name, `readOnly=${!!a.readOnlyHint}`, `destructive=${a.destructiveHint ?? true}`, `idempotent=${!!a.idempotentHint}`,
    `schema=${t.inputSchema.type}`);
}

const saved = await client.callTool({
  name: "memory_save",
  arguments: { namespace: "users/ada", key: "favorite-food", value: { food: "pizza" }, text: "Ada loves pizza" },
});
if (saved.isError) throw new Error("save: " + JSON.stringify(saved));
console.log("saved", `${saved.structuredContent.item.namespace}/${saved.structuredContent.item.key}`);

const found = await client.callTool({ name: "memory_search", arguments: { query: "pizza", namespace: "users" } });
if (found.isError) throw new Error("search: " + JSON.stringify(found));
for (const r of found.structuredContent.results) console.log("found", `${r.item.namespace}/${r.item.key}`, r.score);

const bad = await client.callTool({ name: "memory_save", arguments: { namespace: "users//ada", key: "k", text: "x" } });
console.log("bad namespace:", bad.isError ? "error" : "ok", bad.content.map((c) => c.text).join(" "));

await client.close();
