// Agents no one at Nexus wrote, in front of `nexus serve` (stdio or HTTP)
// whose upstream is testdata/modern-upstream.mjs (MCP 2026-07-28 only):
// the official SDK 1.x client (it speaks 2025-11-25) or the SDK v2 client
// (it negotiates 2026-07-28). cmd/nexus/peers_test.go runs it; it prints
// one JSON line of what it saw, or "FAIL: why" and exits 1.
//
// Usage: node peer-agent.mjs NODE_MODULES JSON
//   JSON: {"sdk": "v1"|"v2", "scenario": "call"|"subscribe",
//          "mode": "stdio", "command": "...", "args": [...], "env": {...}}
//      or {"sdk": ..., "scenario": ..., "mode": "http", "url": "...", "tokens": ["...", ...]}
//   call:      connect, list, echo, and ask (the upstream's input_required
//              round, which reaches a v1 agent as elicitation/create and
//              sampling/createMessage requests).
//   subscribe: (v1, HTTP) two agents (tokens[0], tokens[1]) subscribe to
//              peer://doc and peer://other; who gets which
//              resources/updated, before and after the first unsubscribes.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, raw] = process.argv.slice(2);
const opts = JSON.parse(raw);
const imp = (p) => import(pathToFileURL(join(modules, p)).href);
const wait = 20000; // for a notification, after which it is not coming

function fail(why) {
  console.log(`FAIL: ${why}`);
  process.exit(1);
}
const text = (res) => (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

// sdk is the chosen SDK's client side, in one shape.
async function sdk() {
  if (opts.sdk === "v1") {
    const base = "@modelcontextprotocol/sdk/dist/esm/";
    const { Client } = await imp(base + "client/index.js");
    const { StdioClientTransport } = await imp(base + "client/stdio.js");
    const { StreamableHTTPClientTransport } = await imp(base + "client/streamableHttp.js");
    const t = await imp(base + "types.js");
    return {
      Client, StdioClientTransport, StreamableHTTPClientTransport,
      on: (c, method, fn) => c.setRequestHandler({ "elicitation/create": t.ElicitRequestSchema, "sampling/createMessage": t.CreateMessageRequestSchema }[method], fn),
      onUpdated: (c, fn) => c.setNotificationHandler(t.ResourceUpdatedNotificationSchema, fn),
      version: (c) => c.negotiated,
    };
  }
  const base = "@modelcontextprotocol/client/dist/";
  const { Client, StreamableHTTPClientTransport } = await imp(base + "index.mjs");
  const { StdioClientTransport } = await imp(base + "stdio.mjs");
  return {
    Client, StdioClientTransport, StreamableHTTPClientTransport,
    on: (c, method, fn) => c.setRequestHandler(method, fn),
    version: (c) => c.getNegotiatedProtocolVersion(),
  };
}
const S = await sdk();

// agent connects one client; asked counts the requests it answered.
async function agent(token) {
  const extra = opts.sdk === "v2" ? { versionNegotiation: { mode: "auto" } } : {};
  const c = new S.Client({ name: `peer-agent-${opts.sdk}`, version: "1.0.0" }, { capabilities: { elicitation: {}, sampling: {} }, ...extra });
  const asked = [];
  S.on(c, "elicitation/create", async (req) => {
    asked.push(`elicitation: ${req.params.message}`);
    return { action: "accept", content: { name: "Ada" } };
  });
  S.on(c, "sampling/createMessage", async (req) => {
    asked.push(`sampling: ${req.params.messages[0].content.text}`);
    return { role: "assistant", model: "peer-model", content: { type: "text", text: "forty-two" } };
  });
  const t = opts.mode === "stdio"
    ? new S.StdioClientTransport({ command: opts.command, args: opts.args, env: opts.env, stderr: "inherit" })
    : new S.StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  // The version the initialize result named (SDK 1.x hands it to the
  // transport and keeps it nowhere else).
  const set = t.setProtocolVersion?.bind(t);
  t.setProtocolVersion = (v) => {
    c.negotiated = v;
    set?.(v);
  };
  await c.connect(t);
  return { c, asked };
}

async function call() {
  const { c, asked } = await agent(opts.tokens?.[0]);
  const out = { version: S.version(c) };
  out.tools = (await c.listTools()).tools.map((t) => t.name).sort();
  out.echo = text(await c.callTool({ name: "mcp_peer_echo", arguments: { text: "hello upstream" } }));
  out.ask = text(await c.callTool({ name: "mcp_peer_ask", arguments: { topic: "tea" } }));
  out.asked = asked;
  await c.close();
  return out;
}

// updates collects a client's resources/updated; next waits for one.
function updates(a) {
  const got = [];
  let wake;
  S.onUpdated(a.c, (n) => {
    got.push(n.params.uri);
    wake?.();
  });
  return {
    got,
    // next waits for the nth update of uri.
    async next(uri, n = 1) {
      const deadline = Date.now() + wait;
      while (got.filter((u) => u === uri).length < n) {
        if (Date.now() > deadline) fail(`no resources/updated for ${uri} within ${wait} ms (got ${JSON.stringify(got)})`);
        await new Promise((r) => {
          wake = r;
          setTimeout(r, 100);
        });
      }
    },
  };
}

async function subscribe() {
  const alice = await agent(opts.tokens[0]);
  const bob = await agent(opts.tokens[1]);
  const au = updates(alice), bu = updates(bob);
  const stats = async () => JSON.parse(text(await bob.c.callTool({ name: "mcp_peer_stats", arguments: {} })));
  const touch = (who, uri) => who.c.callTool({ name: "mcp_peer_touch", arguments: { uri } });
  const out = {};
  await alice.c.subscribeResource({ uri: "peer://doc" });
  await bob.c.subscribeResource({ uri: "peer://other" });
  out.subscribed = (await stats()).listening;
  // bob touches alice's resource: only alice hears of it.
  await touch(bob, "peer://doc");
  await au.next("peer://doc");
  await touch(alice, "peer://other");
  await bu.next("peer://other");
  // Each has had what the other's touch would have brought by now
  // (both go out on the upstream's one bus together).
  out.aliceGot = [...au.got];
  out.bobGot = [...bu.got];
  await alice.c.unsubscribeResource({ uri: "peer://doc" });
  out.unsubscribed = (await stats()).listening;
  await touch(bob, "peer://doc");
  await touch(alice, "peer://other");
  await bu.next("peer://other", 2);
  out.aliceAfter = [...au.got];
  out.bobAfter = [...bu.got];
  await alice.c.close();
  await bob.c.close();
  return out;
}

try {
  const out = opts.scenario === "subscribe" ? await subscribe() : await call();
  console.log(JSON.stringify(out));
  process.exit(0);
} catch (e) {
  fail(e && e.stack ? e.stack : String(e));
}
