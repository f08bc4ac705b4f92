package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
)

func (a *app) serveCmd() *cobra.Command {
	var (
		listen, cert, key, metrics string
		consoleAddr                string
		sessionStore               string
		grace                      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve every configured server, behind the chain, to MCP clients (stdio, or HTTP with --listen)",
		Long: `Serve makes Nexus an MCP server that aggregates every server the agent can
see, behind the policy chain. Over stdio (the default) a client starts it:

  {"mcpServers": {"nexus": {"command": "nexus", "args": ["serve", "--agent", "claude"]}}}

With --listen (or a gateway block's listen) it serves streamable HTTP at
/mcp (and the legacy HTTP+SSE endpoints /sse and /messages), /healthz and
/readyz; each request acts as the agent whose token it carries
(Authorization: Bearer TOKEN, from an agent block's tokens) or, with
--agent, as that agent. Logs go to stderr, never stdout. On stdio, the end
of input is answered first: every request read gets its answer (within the
gateway block's limits { drain_timeout }, default 30 s), then serve exits.
On stdio, --agent NAME with no agent NAME block serves one local user with
the built-in default permission (trusted), with a warning; a config that
does not load is also the answer to the client's initialize, so the client
shows why.

--metrics ADDR (or the gateway block's metrics) serves Prometheus metrics at
http://ADDR/metrics. Traces go to an OpenTelemetry collector when the
standard OTEL_EXPORTER_OTLP_ENDPOINT (and _PROTOCOL: http/protobuf or grpc)
say where; a traceparent, tracestate and baggage in a request's _meta are
continued and passed upstream.`,
		Example: `  nexus serve --agent claude
  nexus serve --listen 127.0.0.1:8750
  nexus serve --listen 127.0.0.1:8750 --agent ci   # every request acts as ci: loopback only`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig(false)
			if err != nil {
				if !cmd.Flags().Changed("listen") || listen == "" {
					// The client that started us shows only what it is
					// told: answer its first requests with the error.
					answerStdio(a.stdin, a.stdout, err)
				}
				return &exitError{exitUsage, err}
			}
			a.printWarnings(cfg.Warnings())
			a.cfg = cfg
			log := a.logger()
			o := host.GatewayOptions{Logger: log, Ready: func(what, url string) {
				// The lines on stderr a script waits for.
				switch what {
				case "metrics":
					fmt.Fprintf(a.stderr, "nexus: serving metrics at %s\n", url)
				case "console":
					fmt.Fprintf(a.stderr, "nexus: serving the console at %s\n", url)
				default:
					fmt.Fprintf(a.stderr, "nexus: serving MCP at %s\n", url)
				}
			}}
			// The flags given win over the config's gateway and console
			// blocks.
			flags := cmd.Flags()
			for _, f := range []struct {
				name string
				to   *string
				v    string
			}{{"listen", &o.Listen, listen}, {"tls-cert", &o.TLSCert, cert}, {"tls-key", &o.TLSKey, key}, {"metrics", &o.Metrics, metrics},
				{"session-store", &o.SessionStore, sessionStore}, {"console", &o.Console, consoleAddr}} {
				if flags.Changed(f.name) {
					*f.to = f.v
				}
			}
			// --listen "" asks for stdio over the block's listen.
			o.Stdio = flags.Changed("listen") && listen == ""
			if flags.Changed("grace") {
				o.Grace = grace
			}
			o = o.Resolve(cfg)
			o.Grace = cmp.Or(o.Grace, grace)
			agent := a.agent
			if flags.Changed("agent") || cmd.Root().PersistentFlags().Changed("agent") || o.Listen == "" {
				o.Agent = agent
			}
			if o.Listen == "" && host.LocalAgent(cfg, agent) {
				// One user on one machine: the client started us, so the
				// agent is whoever runs it.
				fmt.Fprintf(a.stderr, "nexus: warning: agent %q is not configured; serving it as the one local user with the built-in default permission (trusted: the first use of each server is confirmed through the client). Add an agent %q block to set its permission.\n", agent, agent)
			}

			confirm := host.ClientConfirmer()
			if a.yes {
				confirm = host.AllowAll{}
			}
			pinned, err := a.readLock(cfg)
			if err != nil {
				return err
			}
			tel, err := a.telemetry(cfg, o.Metrics != "")
			if err != nil {
				return err
			}
			h := host.New(cfg, host.Options{Logger: log, Timeout: a.timeout, Confirm: confirm, Lock: pinned, Telemetry: tel})
			defer h.Close()
			if err := h.OpenAudit(); err != nil {
				return &exitError{exitUsage, err}
			}
			g, err := host.NewGateway(h, o)
			if err != nil {
				return &exitError{exitUsage, err}
			}
			defer g.Close()

			// SIGINT and SIGTERM stop the gateway cleanly (exit 0): it stops
			// accepting, lets calls in flight finish, closes the upstreams.
			ctx, stop := context.WithCancel(cmd.Context())
			defer stop()
			prev := a.setInterrupt(stop)
			defer func() { a.setInterrupt(prev) }()
			term := make(chan os.Signal, 1)
			signal.Notify(term, syscall.SIGTERM)
			defer signal.Stop(term)
			go func() {
				select {
				case <-term:
					stop()
				case <-ctx.Done():
				}
			}()
			return g.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "", "serve streamable HTTP on this address (host:port; default: stdio)")
	f.StringVar(&consoleAddr, "console", "", "serve the web console on this address (host:port; or the console block's listen; needs its tokens)")
	f.StringVar(&metrics, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics (host:port; or the gateway block's metrics)")
	f.StringVar(&cert, "tls-cert", "", "PEM certificate chain for HTTPS")
	f.StringVar(&key, "tls-key", "", "PEM private key for HTTPS")
	f.DurationVar(&grace, "grace", 10*time.Second, "how long calls in flight get to finish on SIGINT or SIGTERM")
	f.StringVar(&sessionStore, "session-store", "", `where replicas share state: "memory" or redis://host:6379 (or the gateway block's session_store); /readyz checks it`)
	return cmd
}

// Bounds of answerStdio: what it reads before it gives up on a client.
const (
	answerLines = 16
	answerWait  = 10 * time.Second
)

// answerStdio answers a stdio client's requests with err, as JSON-RPC
// errors, until it has answered initialize or server/discover (which a
// client shows), the input ends, answerLines lines were read or
// answerWait passed: a client that started `nexus serve` sees why it
// cannot serve, not "failed to connect".
func answerStdio(in io.Reader, out io.Writer, err error) {
	lines := make(chan []byte, answerLines) // the reader never waits on us
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(in, 64<<10)
		for range answerLines {
			l, rerr := r.ReadSlice('\n')
			if len(l) > 0 {
				lines <- bytes.Clone(l)
			}
			if rerr != nil && !errors.Is(rerr, bufio.ErrBufferFull) {
				return
			}
		}
	}()
	timeout := time.NewTimer(answerWait)
	defer timeout.Stop()
	msg := "nexus serve cannot start: " + err.Error()
	for {
		var l []byte
		select {
		case l2, ok := <-lines:
			if !ok {
				return
			}
			l = l2
		case <-timeout.C:
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(l, &req) != nil || len(req.ID) == 0 || string(req.ID) == "null" {
			continue // a notification, or not JSON-RPC: nothing to answer
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID,
			"error": map[string]any{"code": -32603, "message": msg}})
		out.Write(append(b, '\n'))
		if req.Method == "initialize" || req.Method == "server/discover" {
			return
		}
	}
}
