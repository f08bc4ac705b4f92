// The official TypeScript SDK v2 client (MCP 2026-07-28) through `nexus
// serve --listen` to a legacy stdio server (server-everything): the
// server's sampling and elicitation requests come back to the client as
// input_required rounds, which its handlers answer.
// Usage: node bridge-client.mjs URL NODE_MODULES; prints one JSON line.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [url, modules] = process.argv.slice(2);
const load = (f) => import(pathToFileURL(join(modules, "@modelcontextprotocol/client/dist", f)).href);
const { Client, StreamableHTTPClientTransport } = await load("index.mjs");
const client = new Client(
  { name: "sdk-v2-bridge", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: {} }, versionNegotiation: { mode: "auto" } },
);
const asked = [];
client.setRequestHandler("sampling/createMessage", async (req) => {
  asked.push("sampling");
  return { role: "assistant", content: { type: "text", text: "sampled by the SDK client" }, model: "test-model", stopReason: "endTurn" };
});
client.setRequestHandler("elicitation/create", async () => {
  asked.push("elicitation");
  return { action: "accept", content: { name: "Ada", check: true, email: "ada@example.com", homepage: "https://example.com", birthdate: "1815-12-10", integer: 3, number: 3.5, enum: "Option 1" } };
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const out = { version: client.getNegotiatedProtocolVersion() };
// The gateway lists without a server still starting (list_wait): list
// again, a bounded number of times, until it is up.
let tools = [];
for (let i = 0; i < 60 && !tools.includes("trigger-elicitation-request"); i++) {
  if (i > 0) await new Promise((r) => setTimeout(r, 500));
  tools = (await client.listTools()).tools.map((t) => t.name);
}
out.hasSampling = tools.includes("trigger-sampling-request");
const sampled = await client.callTool({ name: "trigger-sampling-request", arguments: { prompt: "hello", maxTokens: 10 } });
out.sampled = JSON.stringify(sampled.content);
if (tools.includes("trigger-elicitation-request")) {
  const elicited = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
  out.elicited = JSON.stringify(elicited.content);
}
out.asked = asked;
console.log(JSON.stringify(out));
await client.close();
