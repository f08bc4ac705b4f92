// A client no one at Nexus wrote: the official MCP TypeScript SDK, driven
// through `nexus serve` (stdio or HTTP) in front of the built-in test
// server. cmd/nexus/serve_test.go runs it; every check prints "ok: NAME",
// the first failure "FAIL: NAME: why" and exit status 1.
//
// Usage: node gateway-client.mjs SDK_DIR JSON
//   JSON: {"mode": "stdio", "command": "...", "args": [...], "env": {...}}
//      or {"mode": "http", "url": "...", "token": "..."}
//      or {"mode": "sse", "url": "...", "token": "..."}
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, raw] = process.argv.slice(2);
const opts = JSON.parse(raw);
const sdk = (p) => import(pathToFileURL(path.join(sdkDir, "dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { SSEClientTransport } = await sdk("client/sse.js");
const types = await sdk("types.js");

function fail(name, why) {
  console.log(`FAIL: ${name}: ${why}`);
  process.exit(1);
}
async function check(name, fn) {
  try {
    await fn();
  } catch (e) {
    fail(name, e && e.stack ? e.stack : String(e));
  }
  console.log(`ok: ${name}`);
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
const text = (res) => (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

const headers = opts.token ? { Authorization: `Bearer ${opts.token}` } : {};
function transport() {
  switch (opts.mode) {
    case "stdio":
      return new StdioClientTransport({ command: opts.command, args: opts.args, env: opts.env, stderr: "inherit" });
    case "http":
      return new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers } });
    case "sse":
      return new SSEClientTransport(new URL(opts.url), { requestInit: { headers }, eventSourceInit: { fetch: (u, i) => fetch(u, { ...i, headers: { ...(i && i.headers), ...headers } }) } });
  }
  throw new Error(`unknown mode ${opts.mode}`);
}

const client = new Client(
  { name: "sdk-gateway-test", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
);
let sampled = 0;
client.setRequestHandler(types.CreateMessageRequestSchema, async (req) => {
  sampled++;
  const msg = req.params.messages[0];
  return { role: "assistant", model: "sdk-test-model", content: { type: "text", text: `model says: ${msg.content.text}` } };
});
client.setRequestHandler(types.ElicitRequestSchema, async () => ({ action: "accept", content: { name: "Ada", confirm: true } }));
client.setRequestHandler(types.ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///sdk/project", name: "project" }] }));
const logs = [];
client.setNotificationHandler(types.LoggingMessageNotificationSchema, (n) => logs.push(n.params));

await check("connect", () => client.connect(transport()));
await check("server info", async () => {
  const v = client.getServerVersion();
  assert(v && v.name === "nexus", `serverInfo ${JSON.stringify(v)}`);
  const caps = client.getServerCapabilities();
  assert(caps.tools && caps.resources && caps.prompts, `capabilities ${JSON.stringify(caps)}`);
});
await check("ping", () => client.ping());

let tools;
await check("tools/list", async () => {
  tools = (await client.listTools()).tools.map((t) => t.name);
  assert(tools.includes("mcp_testserver_echo"), `tools ${tools}`);
  assert(tools.includes("mcp_testserver_sample"), `tools ${tools}`);
});
await check("denied tool is hidden", () => assert(!tools.includes("mcp_testserver_fail"), `mcp_testserver_fail listed: ${tools}`));
await check("denied tool is refused", async () => {
  let err;
  try {
    await client.callTool({ name: "mcp_testserver_fail", arguments: { message: "x" } });
  } catch (e) {
    err = e;
  }
  assert(err, "calling a denied tool succeeded");
  assert(/fail/.test(String(err.message)), `error ${err.message}`);
});
await check("tools/call", async () => {
  const res = await client.callTool({ name: "mcp_testserver_echo", arguments: { message: "hello through nexus" } });
  assert(text(res) === "hello through nexus", `result ${JSON.stringify(res)}`);
});
await check("structured content", async () => {
  const res = await client.callTool({ name: "mcp_testserver_add", arguments: { a: 2, b: 3 } });
  assert(res.structuredContent && res.structuredContent.sum === 5, `result ${JSON.stringify(res)}`);
});
await check("invalid arguments", async () => {
  // A tool execution error the model can correct (SEP-1303), not a
  // protocol error: the tool did not run.
  const res = await client.callTool({ name: "mcp_testserver_add", arguments: { a: "two" } });
  assert(res.isError && text(res).includes("do not match the tool's schema"), `want a tool error about the schema, got ${JSON.stringify(res)}`);
});
await check("log messages", async () => {
  assert(logs.some((l) => l.logger && l.logger.startsWith("testserver") && l.data === "hello through nexus"), `logs ${JSON.stringify(logs)}`);
});
await check("sampling answered by the client", async () => {
  const res = await client.callTool({ name: "mcp_testserver_sample", arguments: { prompt: "2+2?" } });
  assert(sampled === 1, `sampling handler ran ${sampled} times`);
  assert(text(res).includes("model says: 2+2?"), `result ${JSON.stringify(res)}`);
});
await check("elicitation answered by the client", async () => {
  const res = await client.callTool({ name: "mcp_testserver_elicit", arguments: {} });
  assert(text(res).includes("Ada"), `result ${JSON.stringify(res)}`);
});
await check("roots answered by the client", async () => {
  const res = await client.callTool({ name: "mcp_testserver_roots", arguments: {} });
  assert(text(res).includes("file:///sdk/project"), `result ${JSON.stringify(res)}`);
});
await check("progress", async () => {
  const seen = [];
  const res = await client.callTool({ name: "mcp_testserver_slow_operation", arguments: { duration: 0.3, steps: 3 } }, undefined, {
    onprogress: (p) => seen.push(p),
  });
  // The last step's notification races the result inside the SDK (it
  // delivers notifications a tick later than responses), so it may miss
  // that one; the earlier ones must all arrive, in order.
  assert(seen.length >= 2 && seen.every((p, i) => p.progress === i + 1 && p.total === 3), `progress ${JSON.stringify(seen)}`);
  assert(!res.isError, `result ${JSON.stringify(res)}`);
});
await check("cancellation", async () => {
  const ac = new AbortController();
  let err;
  const started = Date.now();
  const p = client.callTool({ name: "mcp_testserver_slow_operation", arguments: { duration: 60, steps: 60 } }, undefined, {
    signal: ac.signal,
    onprogress: () => ac.abort("enough"),
  });
  try {
    await p;
  } catch (e) {
    err = e;
  }
  assert(err, "a cancelled call returned a result");
  assert(Date.now() - started < 30000, "cancellation took the whole call");
  // The session still serves.
  const res = await client.callTool({ name: "mcp_testserver_echo", arguments: { message: "after cancel" } });
  assert(text(res) === "after cancel", `result ${JSON.stringify(res)}`);
});
await check("resources", async () => {
  const list = await client.listResources();
  assert(list.resources.some((r) => r.uri === "file:///readme.txt"), `resources ${JSON.stringify(list)}`);
  const read = await client.readResource({ uri: "file:///readme.txt" });
  assert(read.contents[0].text.includes("Nexus test server"), `read ${JSON.stringify(read)}`);
  const tmpls = await client.listResourceTemplates();
  assert(tmpls.resourceTemplates.length > 0, `templates ${JSON.stringify(tmpls)}`);
  await client.subscribeResource({ uri: "file:///readme.txt" });
  await client.unsubscribeResource({ uri: "file:///readme.txt" });
});
await check("prompts", async () => {
  const list = await client.listPrompts();
  const names = list.prompts.map((p) => p.name);
  assert(names.includes("mcp_testserver_greeting"), `prompts ${names}`);
  const got = await client.getPrompt({ name: "mcp_testserver_greeting", arguments: { name: "Ada" } });
  assert(JSON.stringify(got.messages).includes("Ada"), `prompt ${JSON.stringify(got)}`);
});
await check("completion", async () => {
  const res = await client.complete({ ref: { type: "ref/prompt", name: "mcp_testserver_code_review" }, argument: { name: "language", value: "py" } });
  assert(res.completion.values.includes("python"), `completion ${JSON.stringify(res)}`);
});
await check("logging/setLevel", () => client.setLoggingLevel("warning"));
await check("unknown method", async () => {
  let err;
  try {
    await client.request({ method: "no/such", params: {} }, types.EmptyResultSchema);
  } catch (e) {
    err = e;
  }
  assert(err && err.code === -32601, `want method not found, got ${err && err.message}`);
});
await check("close", () => client.close());
