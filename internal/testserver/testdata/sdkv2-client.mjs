// The official TypeScript SDK v2 client against the test server: it
// negotiates its era (server/discover first), lists and calls tools, and
// fulfils an input_required tool call through its elicitation handler.
// Usage: node sdkv2-client.mjs URL|stdio NODE_MODULES [COMMAND ARGS...];
// with stdio it spawns COMMAND (which serves MCP on its stdin and stdout).
// It prints one JSON line of what it saw. (NODE_MODULES is tools/npm's: an
// ES module does not search NODE_PATH.)
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [url, modules, command, ...args] = process.argv.slice(2);
const load = (f) => import(pathToFileURL(join(modules, "@modelcontextprotocol/client/dist", f)).href);
const { Client, StreamableHTTPClientTransport } = await load("index.mjs");
const { StdioClientTransport } = await load("stdio.mjs");
const client = new Client(
  { name: "sdk-v2-peer", version: "1.0.0" },
  { capabilities: { elicitation: {} }, versionNegotiation: { mode: "auto" } },
);
client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { name: "Ada" } }));
await client.connect(
  url === "stdio"
    ? new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(url)),
);
const out = { version: client.getNegotiatedProtocolVersion() };
const tools = await client.listTools();
out.tools = tools.tools.length;
const simple = await client.callTool({ name: "test_simple_text", arguments: {} });
out.simple = simple.content?.[0]?.text;
const asked = await client.callTool({ name: "test_input_required_result_elicitation", arguments: {} });
out.asked = asked.content?.[0]?.text ?? JSON.stringify(asked);
try {
  await client.readResource({ uri: "test://no-such-resource" });
  out.notFound = "no error";
} catch (e) {
  out.notFound = e.code;
}
console.log(JSON.stringify(out));
await client.close();
