// The official MCP TypeScript SDK as a client of gateway replicas behind a
// load balancer (issue 16): one streamable HTTP session whose requests land
// on any replica. cmd/nexus/replicas_client_test.go runs it. Every check
// prints "ok: NAME", a failure "FAIL: NAME: why"; the script then prints
// "READY-TO-KILL" and waits for one line on stdin (the test kills a replica
// meanwhile), goes on with the same session, prints
// "RESULT {json}" and exits 0 if everything passed, 1 if not.
//
// Usage: node replicas-client.mjs SDK_DIR JSON
//   JSON: {"url": "http://127.0.0.1:PORT/mcp", "token": "...", "calls": N,
//          "parallel": P (calls in flight at once after the kill, default 1),
//          "prefix": "mcp_testserver_" (the test server's tools' names),
//          "resource": "file:///readme.txt" (to subscribe to),
//          "timeoutMs": overall limit (default 150000),
//          "requestTimeoutMs": per request (default 30000),
//          "waitMs": for the line on stdin (default 120000)}
import { pathToFileURL } from "node:url";
import path from "node:path";
import readline from "node:readline";

const [sdkDir, raw] = process.argv.slice(2);
const opts = JSON.parse(raw);
const N = opts.calls ?? 10;
const parallel = Math.max(1, opts.parallel ?? 1);
const prefix = opts.prefix ?? "mcp_testserver_";
const resource = opts.resource ?? "file:///readme.txt";
const requestTimeout = opts.requestTimeoutMs ?? 30000;
const sdk = (p) => import(pathToFileURL(path.join(sdkDir, "dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const types = await sdk("types.js");

// What RESULT reports.
const result = {
  sessionId: null, // at initialize
  sessionIdAfter: null, // after the kill: the same session must go on
  toolsBefore: 0,
  toolsAfter: 0,
  callsBefore: 0, // echo calls answered right before the kill
  calls: N, // echo calls made after the kill
  answered: 0, // each answered with its own message
  mismatched: 0, // answered with another call's message (or garbage)
  failed: 0, // rejected: error, timeout
  samplingRequests: 0, // sampling/createMessage requests the client answered
  samples: 0, // sample calls whose result carried their own answer
  subscribed: false,
  updated: 0, // notifications/resources/updated received
  duplicates: 0, // responses to a request already answered (or never made)
  errors: [], // everything the SDK reported through onerror
  failures: [], // every FAIL line's name
};
let failedAny = false;
let finished = false;
function finish(code) {
  if (finished) return;
  finished = true;
  console.log(`RESULT ${JSON.stringify(result)}`);
  process.exit(failedAny ? 1 : code);
}
function failed(name, why) {
  failedAny = true;
  result.failures.push(name);
  console.log(`FAIL: ${name}: ${why}`);
}
// check runs one step; a failed step ends the script unless it is marked
// soft (the calls after the kill: each must be seen, so the run goes on).
async function check(name, fn, { soft = false, timeout = requestTimeout + 5000 } = {}) {
  try {
    await withTimeout(name, fn(), timeout);
  } catch (e) {
    failed(name, e && e.stack ? e.stack : String(e));
    if (!soft) finish(1);
    return false;
  }
  console.log(`ok: ${name}`);
  return true;
}
function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}
function withTimeout(name, p, ms) {
  let timer;
  return Promise.race([
    Promise.resolve(p).finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${name}: no answer within ${ms} ms`)), ms);
    }),
  ]);
}
const text = (res) => (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
const reqOpts = { timeout: requestTimeout };

const overall = setTimeout(() => {
  failed("overall", `the script did not finish within ${opts.timeoutMs ?? 150000} ms`);
  finish(1);
}, opts.timeoutMs ?? 150000);
process.on("unhandledRejection", (e) => {
  failed("unhandled rejection", e && e.stack ? e.stack : String(e));
  finish(1);
});

const transport = new StreamableHTTPClientTransport(new URL(opts.url), {
  requestInit: { headers: opts.token ? { Authorization: `Bearer ${opts.token}` } : {} },
});
const client = new Client({ name: "sdk-replicas-test", version: "1.0.0" }, { capabilities: { sampling: {} } });
client.onerror = (e) => {
  const msg = (e && e.message ? e.message : String(e)).replace(/\s+/g, " ");
  if (/unknown message ID/.test(msg)) result.duplicates++;
  if (result.errors.length < 50) result.errors.push(msg.slice(0, 300));
};
client.setRequestHandler(types.CreateMessageRequestSchema, async (req) => {
  result.samplingRequests++;
  const msg = req.params.messages[0];
  return { role: "assistant", model: "sdk-test-model", content: { type: "text", text: `model says: ${msg.content.text}` } };
});
client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, (n) => {
  if (n.params.uri === resource) result.updated++;
});

const nonce = Math.random().toString(36).slice(2, 10);
async function echo(label) {
  const message = `${label}-${nonce}`;
  const res = await client.callTool({ name: `${prefix}echo`, arguments: { message } }, undefined, reqOpts);
  if (res.isError || text(res) !== message) {
    result.mismatched++;
    throw new Error(`asked to echo ${JSON.stringify(message)}, got ${JSON.stringify(res)}`);
  }
}
async function sample(label) {
  const prompt = `${label} ${nonce}: 2+2?`;
  const before = result.samplingRequests;
  const res = await client.callTool({ name: `${prefix}sample`, arguments: { prompt } }, undefined, reqOpts);
  assert(result.samplingRequests === before + 1, `sampling handler ran ${result.samplingRequests - before} times for one call`);
  assert(!res.isError && text(res).includes(`model says: ${prompt}`), `result ${JSON.stringify(res)}`);
  result.samples++;
}
async function listTools() {
  const names = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined, reqOpts);
    names.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);
  assert(names.includes(`${prefix}echo`) && names.includes(`${prefix}sample`), `tools ${names}`);
  return names.length;
}

// Before the kill: the whole session set up, each feature used once.
await check("connect", () => client.connect(transport));
result.sessionId = transport.sessionId ?? null;
await check("session id", () => assert(result.sessionId, "the gateway gave no Mcp-Session-Id"));
await check("ping", () => client.ping(reqOpts));
await check("tools/list", async () => {
  result.toolsBefore = await listTools();
});
await check("tools/call echo", async () => {
  for (let i = 0; i < 3; i++) {
    await echo(`before-${i}`);
    result.callsBefore++;
  }
}, { timeout: 3 * requestTimeout + 5000 });
await check("sampling answered by the client", () => sample("before"));
await check("resources/subscribe", async () => {
  await client.subscribeResource({ uri: resource }, reqOpts);
  result.subscribed = true;
});
await check("resources/read", async () => {
  const read = await client.readResource({ uri: resource }, reqOpts);
  assert(read.contents.length > 0, `read ${JSON.stringify(read)}`);
});

// The test kills a replica now, and writes a line when it is gone.
console.log("READY-TO-KILL");
await check("go on", async () => {
  const rl = readline.createInterface({ input: process.stdin });
  try {
    await withTimeout(
      "the line on stdin",
      new Promise((resolve, reject) => {
        rl.once("line", resolve);
        rl.once("close", () => reject(new Error("stdin closed without a line")));
      }),
      opts.waitMs ?? 120000,
    );
  } finally {
    rl.close();
    process.stdin.destroy();
  }
}, { timeout: (opts.waitMs ?? 120000) + 5000 });

// After the kill: the same session, every call answered once, with its own
// answer; a failed call is reported and counted, and the run goes on.
let next = 0;
async function worker() {
  while (next < N) {
    const i = next++;
    const mismatched = result.mismatched;
    const ok = await check(`call ${i} after`, () => echo(`after-${i}`), { soft: true });
    if (ok) result.answered++;
    else if (result.mismatched === mismatched) result.failed++;
  }
}
await Promise.all(Array.from({ length: Math.min(parallel, N) }, worker));
await check("sampling after", () => sample("after"), { soft: true });
await check("tools/list after", async () => {
  result.toolsAfter = await listTools();
  assert(result.toolsAfter === result.toolsBefore, `${result.toolsAfter} tools, ${result.toolsBefore} before`);
}, { soft: true });
await check("resources/unsubscribe", () => client.unsubscribeResource({ uri: resource }, reqOpts), { soft: true });
result.sessionIdAfter = transport.sessionId ?? null;
await check("same session", () => assert(result.sessionIdAfter === result.sessionId, `session ${result.sessionIdAfter}, was ${result.sessionId}`), { soft: true });
await check("no duplicate responses", () => assert(result.duplicates === 0, `${result.duplicates}: ${result.errors.join("; ")}`), { soft: true });
await check("close", async () => {
  await transport.terminateSession();
  await client.close();
}, { soft: true });
clearTimeout(overall);
finish(0);
