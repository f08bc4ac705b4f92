// An upstream no one at Nexus wrote: a server of @modelcontextprotocol/server
// 2.4.0 that serves only MCP 2026-07-28 (a 2025-11-25 initialize is
// refused), over streamable HTTP or stdio. cmd/nexus/peers_test.go puts
// `nexus serve` in front of it.
//
// Usage: node modern-upstream.mjs NODE_MODULES (http PORT | stdio)
//
// Tools:
//   echo {text}    returns text.
//   ask {topic}    asks, in one input_required round, for an elicitation
//                  (a name) and a sampling (a model's answer); the retry
//                  must carry the exact requestState this process handed
//                  out for that topic. It answers what the retry carried.
//   touch {uri}    publishes notifications/resources/updated for uri on the
//                  subscriptions/listen streams that opted in (HTTP only).
//   stats          what it saw: tools/call by tool, and the resource
//                  subscriptions of each open listen stream (HTTP only).
// Resources: peer://doc, peer://other.
import http from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [, , modules, mode, port] = process.argv;
const load = (f) => import(pathToFileURL(join(modules, "@modelcontextprotocol/server/dist", f)).href);
const { McpServer, createMcpHandler, fromJsonSchema, inputRequired, inputResponse } = await load("index.mjs");

const calls = {}; // tools/call by tool, this process's
const issued = new Set(); // the requestStates handed out
let handler; // HTTP: its notify publishes to the listen streams
let rounds = 0;
const listening = new Map(); // open subscriptions/listen streams: their resourceSubscriptions
let streams = 0;

const schema = (props, required) => fromJsonSchema({ type: "object", properties: props, required });
const text = (t) => ({ content: [{ type: "text", text: t }] });

function build() {
  const server = new McpServer(
    { name: "modern-upstream", version: "2.4.0" },
    { capabilities: { tools: {}, resources: { subscribe: true } }, supportedProtocolVersions: ["2026-07-28"] },
  );
  const count = (name) => {
    calls[name] = (calls[name] ?? 0) + 1;
  };
  server.registerTool("echo", { description: "Echo the text", inputSchema: schema({ text: { type: "string" } }, ["text"]) }, async ({ text: t }) => {
    count("echo");
    return text(t);
  });
  server.registerTool("ask", { description: "Ask the user and a model", inputSchema: schema({ topic: { type: "string" } }, ["topic"]) }, async ({ topic }, ctx) => {
    count("ask");
    const who = inputResponse(ctx.mcpReq.inputResponses, "who");
    const model = inputResponse(ctx.mcpReq.inputResponses, "model");
    if (who.kind !== "elicit" || model.kind !== "sampling") {
      const state = `ask-${++rounds}-${topic}`;
      issued.add(state);
      return inputRequired({
        inputRequests: {
          who: inputRequired.elicit({
            message: `Who asks about ${topic}?`,
            requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
          }),
          model: inputRequired.createMessage({
            messages: [{ role: "user", content: { type: "text", text: `Say something about ${topic}` } }],
            maxTokens: 20,
          }),
        },
        requestState: state,
      });
    }
    const raw = typeof ctx.mcpReq.requestState === "function" ? ctx.mcpReq.requestState() : ctx.mcpReq.requestState;
    const ok = issued.has(raw) && raw.endsWith(`-${topic}`);
    const said = model.result?.content?.text ?? JSON.stringify(model.result?.content);
    return text(`${topic}: name=${who.content?.name} model=${said} state=${ok ? "ok" : `bad(${raw})`}`);
  });
  server.registerTool("touch", { description: "Say a resource changed", inputSchema: schema({ uri: { type: "string" } }, ["uri"]) }, async ({ uri }) => {
    count("touch");
    handler?.notify.resourceUpdated(uri);
    return text(`touched ${uri}`);
  });
  server.registerTool("stats", { description: "What this process saw", inputSchema: schema({}, []) }, async () =>
    text(JSON.stringify({ calls, listening: [...listening.values()].sort() })),
  );
  for (const [name, uri] of [["doc", "peer://doc"], ["other", "peer://other"]]) {
    server.registerResource(name, uri, { mimeType: "text/plain" }, async () => ({ contents: [{ uri, text: `the ${name}` }] }));
  }
  return server;
}

if (mode === "stdio") {
  const { serveStdio } = await load("stdio.mjs");
  serveStdio(build, { legacy: "reject" });
} else {
  handler = createMcpHandler(build, { legacy: "reject" });
  const srv = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (Array.isArray(v)) v.forEach((x) => headers.append(k, x));
      else if (v !== undefined) headers.set(k, v);
    }
    let msg;
    try {
      msg = JSON.parse(body.toString());
    } catch {
      // not JSON: the handler answers it
    }
    if (msg?.method === "subscriptions/listen") {
      const n = ++streams;
      listening.set(n, (msg.params?.notifications?.resourceSubscriptions ?? []).join(","));
      res.on("close", () => listening.delete(n));
    }
    // A client that goes away (a listen stream closed) ends the exchange,
    // so the server drops that stream's subscription.
    const ac = new AbortController();
    res.on("close", () => ac.abort());
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers,
      body: req.method === "GET" || req.method === "HEAD" ? undefined : body,
      signal: ac.signal,
    });
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      const reader = response.body.getReader();
      res.on("close", () => reader.cancel().catch(() => {}));
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          res.write(value);
        }
      } catch {
        // the client went away
      }
    }
    res.end();
  });
  srv.listen(Number(port), "127.0.0.1", () => process.stderr.write(`listening ${port}\n`));
}
