// A server built with @modelcontextprotocol/server 2.4.0 that serves only
// the stateless revision (2026-07-28), over streamable HTTP or stdio: the
// real modern peer of Nexus's client in tests.
//
// Usage: node modern-server.mjs NODE_MODULES_DIR (http PORT | stdio)
//
// Tools: "echo" returns its text; "deploy" asks for a confirmation by
// elicitation through MRTR (an input_required result with requestState)
// and reports what the retry carried. Its env argument is mirrored in the
// Mcp-Param-Env header (x-mcp-header), which the server checks.
import http from 'node:http';

const [, , modules, mode, port] = process.argv;
const sdk = await import(`${modules}/@modelcontextprotocol/server/dist/index.mjs`);
const { McpServer, createMcpHandler, fromJsonSchema, inputRequired, inputResponse } = sdk;

function build() {
  const server = new McpServer(
    { name: 'modern-peer', version: '2.4.0' },
    { capabilities: { tools: {} }, supportedProtocolVersions: ['2026-07-28'], instructions: 'modern only' },
  );
  server.registerTool('echo', {
    description: 'Echo the text',
    inputSchema: fromJsonSchema({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }),
  }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
  server.registerTool('deploy', {
    description: 'Deploy after the user confirms',
    inputSchema: fromJsonSchema({
      type: 'object',
      properties: { env: { type: 'string', 'x-mcp-header': 'Env' } },
      required: ['env'],
    }),
  }, async ({ env }, ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
    if (answer.kind !== 'elicit') {
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            message: `Deploy to ${env}?`,
            requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
          }),
        },
        requestState: `state-for-${env}`,
      });
    }
    const state = typeof ctx.mcpReq.requestState === 'function' ? ctx.mcpReq.requestState() : ctx.mcpReq.requestState;
    return { content: [{ type: 'text', text: `deploy ${env}: ${answer.action} ${JSON.stringify(answer.content)} state=${JSON.stringify(state ?? null)}` }] };
  });
  return server;
}

if (mode === 'stdio') {
  const { serveStdio } = await import(`${modules}/@modelcontextprotocol/server/dist/stdio.mjs`);
  serveStdio(build, { legacy: 'reject' });
} else {
  const handler = createMcpHandler(build, { legacy: 'reject' });
  const srv = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (Array.isArray(v)) v.forEach((x) => headers.append(k, x));
      else if (v !== undefined) headers.set(k, v);
    }
    if (req.method === 'POST' && req.headers['mcp-method'] === 'tools/call' && body.includes('"deploy"')) {
      // Count what the client mirrored, for the test to check.
      process.stderr.write(`mcp-param-env=${req.headers['mcp-param-env'] ?? ''}\n`);
    }
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method, headers, body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
    });
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      for await (const chunk of response.body) res.write(chunk);
    }
    res.end();
  });
  srv.listen(Number(port), '127.0.0.1', () => process.stderr.write(`listening ${port}\n`));
}
