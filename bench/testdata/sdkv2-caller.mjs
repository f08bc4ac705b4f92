// The official TypeScript SDK v2 client (@modelcontextprotocol/client) as
// a benchmark contender: it connects to URL (streamable HTTP), then for
// each line "call" on stdin makes one tools/call of echo and answers with
// a line holding the call's own duration in nanoseconds, timed here, so
// the pipe to the Go benchmark that drives it is not counted.
// Usage: node sdkv2-caller.mjs URL NODE_MODULES (tools/npm's: an ES module
// does not search NODE_PATH). The first line it prints is
// "ready VERSION", the version it speaks with the server.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";

const [url, modules] = process.argv.slice(2);
const { Client, StreamableHTTPClientTransport } = await import(
  pathToFileURL(join(modules, "@modelcontextprotocol/client/dist/index.mjs")).href
);
const client = new Client({ name: "sdk-v2-bench", version: "1.0.0" }, { capabilities: {}, versionNegotiation: { mode: "auto" } });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
process.stdout.write(`ready ${client.getNegotiatedProtocolVersion()}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  if (line !== "call") {
    process.stdout.write(`error: unknown command ${JSON.stringify(line)}\n`);
    continue;
  }
  try {
    const t0 = process.hrtime.bigint();
    const res = await client.callTool({ name: "echo", arguments: { message: "hello" } });
    const ns = process.hrtime.bigint() - t0;
    const text = res.content?.[0]?.text;
    process.stdout.write(text === "hello" ? `${ns}\n` : `error: unexpected result ${JSON.stringify(res)}\n`);
  } catch (e) {
    process.stdout.write(`error: ${String(e).replace(/\n/g, " ")}\n`);
  }
}
await client.close();
