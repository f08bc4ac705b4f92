'use strict';
// A Nexus policy plugin in Node.js: an allow list of tools. The host
// launches it through go-plugin's handshake and calls it over gRPC with
// the public contract, sdk/plugin/proto/plugin.proto, loaded at run time.
// README.md beside this file says how to run it; the contract's own
// README (sdk/plugin/proto/README.md) explains each step serve() takes.
//
// The file has two parts: allowList, the policy, which is all an author
// writes; and serve(), which speaks the protocol for any policy of the
// same shape. Another file may require it and serve its own policy.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

// ---- the policy

// allowList lets agents use only the tools its config names: a tools/call
// of any other tool is denied, and a tools/list leaves it out. Events that
// are not about a tool (resources/read, prompts/get, ...) are allowed.
const allowList = {
  // The config schema: the host checks each filter block against it when
  // it loads the config, so newPolicy sees only configs that match it.
  schema: {
    type: 'object',
    properties: {
      allow: {
        type: 'array',
        items: { type: 'string', minLength: 1 },
        description: 'Tools to allow, as "server.tool"; * matches any run of characters ("github.get_*").',
      },
    },
    required: ['allow'],
    additionalProperties: false,
  },

  // newPolicy makes the decider of one filter block: config is its
  // config, filter its name. A throw refuses the config.
  newPolicy(config, filter) {
    const patterns = config.allow.map(globRegExp);
    return (event) => {
      if (!event.tool) {
        return { action: 'allow' };
      }
      const name = `${event.server.name}.${event.tool.name}`;
      if (patterns.some((re) => re.test(name))) {
        return { action: 'allow' };
      }
      log('info', 'denied', { filter, tool: name, agent: event.agent.id });
      return { action: 'deny', reason: `tool "${name}" is not on the allow list of filter "${filter}"` };
    };
  },
};

function globRegExp(pattern) {
  const parts = pattern.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${parts.join('.*')}$`, 's');
}

// ---- the protocol

// What the host and its plugins agree on (internal/pluginwire/handshake.go
// in the Nexus source).
const MAGIC_COOKIE_KEY = 'NEXUS_PLUGIN_MAGIC_COOKIE';
const MAGIC_COOKIE_VALUE = '5e3b7c1d9a0f4e2b8c6d1a7f3e9b2c4d';
const CORE_PROTOCOL = 1; // go-plugin's own handshake version
const APP_PROTOCOL = 1; // the Nexus plugin protocol version
const EVENT_ABI = 1; // the event and decision JSON (sdk/event.ABI)
// A 10 MiB frame plus room for the envelope: the limit both sides set.
const MAX_MESSAGE = 10 * 1024 * 1024 + 64 * 1024;

// The public contract: the checkout's copy, unless NEXUS_PLUGIN_PROTO names
// another (the host passes no variables of its own: set it in the wrapper
// script that the plugin block runs).
const PROTO = process.env.NEXUS_PLUGIN_PROTO ||
  path.join(__dirname, '..', '..', 'sdk', 'plugin', 'proto', 'plugin.proto');

// log writes one line to stderr as JSON in go-plugin's log format; the host
// re-emits it through its own logger at its level, tagged with the plugin
// block's name. The timestamp must have six decimals: go-plugin logs a line
// whose timestamp it cannot parse verbatim at debug level.
function log(level, message, fields) {
  const at = new Date().toISOString().replace('Z', '000Z');
  process.stderr.write(JSON.stringify({ '@level': level, '@message': message, '@timestamp': at, ...fields }) + '\n');
}

// A gRPC error the host shows: "code" is a gRPC status code.
function failure(code, details) {
  return { code, details };
}

// serve runs plugin ({name, version, policy: {schema, newPolicy}}) for the
// host that launched it. A decider returns a decision object, or a promise
// of one; a string is sent as it is, as the decision's JSON.
function serve(plugin) {
  if (process.env[MAGIC_COOKIE_KEY] !== MAGIC_COOKIE_VALUE) {
    process.stderr.write(`This is a Nexus plugin (${plugin.name}). Nexus runs it: name it in a plugin block of nexus.hcl ` +
      'and nexus launches it with the handshake it needs. Run by hand, it has nothing to serve.\n');
    process.exit(1);
  }
  // The host offers its protocol versions in PLUGIN_PROTOCOL_VERSIONS.
  // This plugin speaks one and announces it whatever the offer, as
  // go-plugin's own servers do: a host that does not speak it reports
  // the mismatch with both sides' versions.

  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO, {
    keepCase: true, // fields as the .proto names them: protocol_versions, event_abi
    longs: String, // uint64 seq stays exact
    defaults: true,
  }));
  const v1 = pkg.nexus.plugin.v1;

  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE,
    'grpc.max_send_message_length': MAX_MESSAGE,
  });
  server.addService(v1.Meta.service, {
    Info(_call, callback) {
      callback(null, {
        kinds: ['policy'],
        protocol_versions: [APP_PROTOCOL],
        config_schemas: { policy: Buffer.from(JSON.stringify(plugin.policy.schema)) },
        event_abi: EVENT_ABI,
        name: plugin.name,
        version: plugin.version,
      });
    },
  });
  server.addService(v1.Policy.service, policyService(plugin.policy));
  // What go-plugin itself calls: the health check of its Ping, and
  // Shutdown, the graceful stop. Their messages are tiny and fixed, so
  // they are written here as bytes rather than loaded from go-plugin's
  // .proto files.
  server.addService(rawService('grpc.health.v1.Health', 'Check'), {
    Check(_call, callback) {
      callback(null, Buffer.from([0x08, 0x01])); // HealthCheckResponse{status: SERVING}
    },
  });
  server.addService(rawService('plugin.GRPCController', 'Shutdown'), {
    Shutdown(_call, callback) {
      callback(null, Buffer.alloc(0)); // Empty
      // Finish the calls in flight, then exit; a second at most.
      server.tryShutdown(() => process.exit(0));
      setTimeout(() => process.exit(0), 1000).unref();
    },
  });

  // go-plugin's terminal habits: a Ctrl-C meant for the host must not stop
  // the plugin under it (the host stops it, with Shutdown).
  process.on('SIGINT', () => {});

  // Listen on a Unix socket in a private directory (mode 0700), where only
  // this user can connect; on Windows, on loopback TCP.
  let network = 'tcp';
  let address = '127.0.0.1:0';
  if (process.platform !== 'win32') {
    const dir = fs.mkdtempSync(path.join(process.env.PLUGIN_UNIX_SOCKET_DIR || os.tmpdir(), 'nexus-plugin-'));
    process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    network = 'unix';
    address = path.join(dir, 'plugin.sock');
  }

  // AutoMTLS: the host sends its one-time certificate in PLUGIN_CLIENT_CERT
  // and accepts only the server certificate the handshake line carries
  // back; this server accepts only clients with the host's certificate.
  let credentials = grpc.ServerCredentials.createInsecure();
  let certField = '';
  if (process.env.PLUGIN_CLIENT_CERT) {
    const { cert, key } = selfSignedCert();
    credentials = grpc.ServerCredentials.createSsl(Buffer.from(process.env.PLUGIN_CLIENT_CERT),
      [{ private_key: Buffer.from(key), cert_chain: Buffer.from(pem('CERTIFICATE', cert)) }], true);
    certField = cert.toString('base64').replace(/=+$/, ''); // go-plugin reads it unpadded
  }

  server.bindAsync(network === 'unix' ? `unix:${address}` : address, credentials, (err, port) => {
    if (err) {
      log('error', `cannot listen on ${address}: ${err.message}`);
      process.exit(1);
    }
    if (network === 'tcp') {
      address = `127.0.0.1:${port}`;
    }
    // The handshake: one line on stdout, and nothing else ever on stdout.
    const fields = [CORE_PROTOCOL, APP_PROTOCOL, network, address, 'grpc'];
    if (certField) {
      fields.push(certField);
    }
    process.stdout.write(fields.join('|') + '\n');
  });
}

// policyService serves the Policy service for policy: Configure, Decide,
// and the Decisions stream the host prefers.
function policyService(policy) {
  const instances = new Map(); // instance id -> decider
  let next = 0;

  async function decide(req) {
    const decider = instances.get(req.instance);
    if (!decider) {
      // The host configures the filter again and retries once.
      throw failure(grpc.status.NOT_FOUND, `unknown instance "${req.instance}"`);
    }
    let event;
    try {
      event = JSON.parse(req.event.toString('utf8'));
    } catch (e) {
      throw failure(grpc.status.INVALID_ARGUMENT, `the event is not valid JSON: ${e.message}`);
    }
    if (event.abi !== EVENT_ABI) {
      throw failure(grpc.status.FAILED_PRECONDITION, `event ABI ${event.abi}, but the plugin was written for ABI ${EVENT_ABI}`);
    }
    let decision;
    try {
      decision = await decider(event);
    } catch (e) {
      throw failure(grpc.status.UNKNOWN, String((e && e.message) || e));
    }
    return Buffer.from(typeof decision === 'string' ? decision : JSON.stringify(decision));
  }

  return {
    Configure(call, callback) {
      try {
        const raw = call.request.config;
        const config = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : {};
        const decider = policy.newPolicy(config, call.request.name);
        const id = String(++next);
        instances.set(id, decider);
        callback(null, { instance: id });
      } catch (e) {
        callback(failure(grpc.status.INVALID_ARGUMENT, String((e && e.message) || e)));
      }
    },

    Decide(call, callback) {
      decide(call.request).then((decision) => callback(null, { decision }), (err) => callback(err));
    },

    // Each request is answered when its decider is done, tagged with its
    // seq; a failure is an answer with code and error, and the stream
    // stays open. A cancelled call's answer is not sent.
    Decisions(call) {
      const pending = new Set();
      const cancelled = new Set();
      let ending = false;
      const finish = () => {
        if (ending && pending.size === 0) {
          call.end();
        }
      };
      call.on('data', (req) => {
        if (req.cancel) {
          if (pending.has(req.seq)) {
            cancelled.add(req.seq);
          }
          return;
        }
        pending.add(req.seq);
        decide(req)
          .then((decision) => ({ seq: req.seq, decision }),
            (err) => ({ seq: req.seq, code: err.code || grpc.status.UNKNOWN, error: err.details || String(err) }))
          .then((resp) => {
            pending.delete(req.seq);
            if (!cancelled.delete(req.seq)) {
              call.write(resp);
            }
            finish();
          });
      });
      // The host closed its side: answer what is left, then end ours.
      call.on('end', () => {
        ending = true;
        finish();
      });
      call.on('error', () => {}); // the host went away; nothing to answer
    },
  };
}

// rawService is a one-method unary service whose messages stay bytes.
function rawService(service, method) {
  const same = (b) => b;
  return {
    [method]: {
      path: `/${service}/${method}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: same,
      requestDeserialize: same,
      responseSerialize: same,
      responseDeserialize: same,
    },
  };
}

// ---- the server's one-time certificate

// selfSignedCert makes an ECDSA P-256 key and a self-signed X.509
// certificate for "localhost", the name go-plugin's client checks, valid
// for server and client authentication. Node can sign but not build
// certificates, so the DER is assembled here.
function selfSignedCert() {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const name = seq(der(0x31, seq(oid('2.5.4.3'), der(0x0c, Buffer.from('localhost'))))); // CN=localhost
  const ecdsaWithSHA256 = seq(oid('1.2.840.10045.4.3.2'));
  const serial = crypto.randomBytes(16);
  serial[0] = (serial[0] & 0x7f) | 0x40; // positive, and minimal as DER wants
  const now = Date.now();
  const extension = (id, critical, value) =>
    seq(oid(id), ...(critical ? [der(0x01, Buffer.from([0xff]))] : []), der(0x04, value));
  const tbs = seq(
    der(0xa0, der(0x02, Buffer.from([2]))), // version 3
    der(0x02, serial),
    ecdsaWithSHA256,
    name,
    seq(asn1Time(new Date(now - 60 * 1000)), asn1Time(new Date(now + 365 * 24 * 3600 * 1000))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    der(0xa3, seq(
      extension('2.5.29.19', true, seq(der(0x01, Buffer.from([0xff])))), // basic constraints: CA
      extension('2.5.29.15', true, der(0x03, Buffer.from([0x02, 0x84]))), // key usage: digital signature, cert sign
      extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'), oid('1.3.6.1.5.5.7.3.2'))), // server and client auth
      extension('2.5.29.17', false, seq(der(0x82, Buffer.from('localhost')))), // DNS:localhost
    )),
  );
  const signature = crypto.sign('sha256', tbs, privateKey);
  const cert = seq(tbs, ecdsaWithSHA256, der(0x03, Buffer.concat([Buffer.from([0]), signature])));
  return { cert, key: privateKey.export({ type: 'pkcs8', format: 'pem' }) };
}

function der(tag, ...parts) {
  const body = Buffer.concat(parts);
  let len = [body.length];
  if (body.length >= 0x80) {
    len = [];
    for (let n = body.length; n > 0; n = Math.floor(n / 256)) {
      len.unshift(n % 256);
    }
    len.unshift(0x80 | len.length);
  }
  return Buffer.concat([Buffer.from([tag, ...len]), body]);
}

function seq(...parts) {
  return der(0x30, ...parts);
}

function oid(dotted) {
  const arcs = dotted.split('.').map(Number);
  const out = [40 * arcs[0] + arcs[1]];
  for (const arc of arcs.slice(2)) {
    const b = [arc & 0x7f];
    for (let n = arc >>> 7; n > 0; n >>>= 7) {
      b.unshift(0x80 | (n & 0x7f));
    }
    out.push(...b);
  }
  return der(0x06, Buffer.from(out));
}

// asn1Time is UTCTime before 2050 and GeneralizedTime from then on, as
// X.509 requires.
function asn1Time(d) {
  const two = (n) => String(n).padStart(2, '0');
  const rest = two(d.getUTCMonth() + 1) + two(d.getUTCDate()) + two(d.getUTCHours()) +
    two(d.getUTCMinutes()) + two(d.getUTCSeconds()) + 'Z';
  const y = d.getUTCFullYear();
  return y < 2050 ? der(0x17, Buffer.from(two(y % 100) + rest)) : der(0x18, Buffer.from(String(y) + rest));
}

function pem(type, body) {
  const lines = body.toString('base64').match(/.{1,64}/g).join('\n');
  return `-----BEGIN ${type}-----\n${lines}\n-----END ${type}-----\n`;
}

module.exports = { serve, allowList, log };

if (require.main === module) {
  serve({ name: 'node-allowlist', version: '0.1.0', policy: allowList });
}
