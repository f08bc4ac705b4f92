package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
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
				if !cmd.Flags().Changed("listen") {
					// The client that started us shows only what it is
					// told: answer its first requests with the error.
					answerStdio(a.stdin, a.stdout, err)
				}
				return &exitError{exitUsage, err}
			}
			a.printWarnings(cfg.Warnings)
			a.cfg = cfg
			gw := cfg.Gateway
			if gw == nil {
				gw = &config.Gateway{}
			}
			if !cmd.Flags().Changed("listen") {
				listen = gw.Listen
			}
			if !cmd.Flags().Changed("tls-cert") {
				cert = gw.TLSCert
			}
			if !cmd.Flags().Changed("tls-key") {
				key = gw.TLSKey
			}
			if !cmd.Flags().Changed("metrics") {
				metrics = gw.Metrics
			}
			if !cmd.Flags().Changed("session-store") {
				sessionStore = gw.SessionStore
			}
			if (cert == "") != (key == "") {
				return usageErr("--tls-cert and --tls-key go together")
			}
			if !cmd.Flags().Changed("grace") && gw.Limits.ShutdownGrace > 0 {
				grace = gw.Limits.ShutdownGrace
			}
			agent := a.agent
			agentGiven := cmd.Flags().Changed("agent") || cmd.Root().PersistentFlags().Changed("agent")
			if listen == "" && agent != host.CLIAgent && cfg.Agent(agent) == nil {
				// One user on one machine: the client started us, so the
				// agent is whoever runs it, with the default the command
				// line gets (trusted: each server's first use confirmed
				// through the client).
				fmt.Fprintf(a.stderr, "nexus: warning: agent %q is not configured; serving it as the one local user with the built-in default permission (trusted: the first use of each server is confirmed through the client). Add an agent %q block to set its permission.\n", agent, agent)
				cfg.Agents = append(cfg.Agents, &config.Agent{Name: agent, Permission: "trusted"})
			}

			var confirm = host.ClientConfirmer()
			if a.yes {
				confirm = host.AllowAll{}
			}
			log := a.logger()
			pinned, err := a.readLock(cfg)
			if err != nil {
				return err
			}
			tel, err := a.telemetry(cfg, metrics != "")
			if err != nil {
				return err
			}
			co := consoleOptions(cfg, consoleAddr)
			// A replica sharing a session store reports its status there
			// for the other replicas' consoles, with or without a console
			// of its own.
			sharing := listen != "" && sessionStore != "" && sessionStore != "memory"
			var feed *audit.Feed // the console's decisions, as the audit log gets them
			if co != nil || sharing {
				feed = audit.NewFeed()
			}
			h := host.New(cfg, host.Options{Logger: log, Timeout: a.timeout, Confirm: confirm, Lock: pinned, Telemetry: tel, Feed: feed})
			defer h.Close()
			if err := h.OpenAudit(); err != nil {
				return &exitError{exitUsage, err}
			}
			stateKey, err := a.stateKey(gw)
			if err != nil {
				return err
			}
			g := host.NewGateway(h, host.GatewayOptions{Logger: log.Named("gateway"), Metrics: tel.Metrics(), Eager: true, ListWait: gw.ListWait, CacheTTL: gw.CacheTTL, StateKey: stateKey,
				InputTTL: gw.InputTTL, MaxUpstreams: gw.Limits.MaxBridgedUpstreams, MaxUpstreamsPerAgent: gw.Limits.MaxBridgedUpstreamsPerAgent})
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
			if metrics != "" {
				addr, err := serveMetrics(ctx, metrics, tel.Metrics(), log.Error)
				if err != nil {
					return &exitError{exitConnection, err}
				}
				fmt.Fprintf(a.stderr, "nexus: serving metrics at http://%s/metrics\n", addr)
			}
			// Every replica follows the lockfile: what one's console
			// accepts (or nexus lock writes) is enforced by all, without a
			// restart.
			watched := make(chan struct{})
			go func() { defer close(watched); h.WatchLock(ctx, host.LockPath(cfg), lockWatch) }()
			defer func() { stop(); <-watched }()
			// The store replicas share, opened before the console, which
			// reports this replica's status there.
			var shared store.Store
			if sharing {
				st, err := openStore(sessionStore, log)
				if err != nil {
					return &exitError{exitUsage, err}
				}
				defer st.Close()
				shared = st
			}
			stopConsole, err := a.startConsole(ctx, co, feed, h, g, sessionStore, shared, log)
			if err != nil {
				return err
			}
			defer stopConsole()

			if listen == "" {
				if !h.Agent(agent) {
					return usageErr("agent %q is not configured: add an agent %q block, or pass --agent with the name of one", agent, agent)
				}
				g.Warm(agent) // the client's first tools/list finds its servers up or starting
				log.Info("serving MCP on stdin and stdout", "agent", agent)
				// At the end of input, what was asked is answered first,
				// as a Unix filter does.
				drain := gw.Limits.DrainTimeout
				if drain <= 0 {
					drain = 30 * time.Second
				}
				err := g.ServeDrain(ctx, mcp.StdioConn(), agent, drain)
				if err != nil && ctx.Err() == nil && !isEOF(err) {
					return err
				}
				return nil
			}
			o := gateway.HTTPOptions{AllowedOrigins: gw.AllowedOrigins, AllowedHosts: gw.AllowedHosts, Required: gw.RequiredServers, Limits: gw.Limits}
			if u, err := url.Parse(gw.PublicURL); err == nil && u.Host != "" {
				o.AllowedHosts = append(o.AllowedHosts, u.Host)
			}
			if agentGiven {
				o.Agent = agent
			}
			if err := gateway.OAuth(gw, gw.PublicURL, &o); err != nil {
				return &exitError{exitUsage, err}
			}
			if shared != nil {
				o.Store, o.StoreName = shared, store.Name(sessionStore)
			}
			hh, err := g.HTTP(o)
			if err != nil {
				return &exitError{exitUsage, err}
			}
			return hh.ListenAndServe(ctx, gateway.ListenOptions{
				Addr: listen, TLSCert: cert, TLSKey: key, Grace: grace,
				Ready: func(addr net.Addr) {
					if agentGiven {
						g.Warm(agent) // once listening: a failed listen starts nothing
					}
					// The one line on stderr a script waits for.
					fmt.Fprintf(a.stderr, "nexus: serving MCP at %s\n", gateway.URLFor(addr, cert != ""))
				},
			})
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

// openStore opens the session store a URL names.
func openStore(url string, log hclog.Logger) (store.Store, error) {
	if strings.HasPrefix(url, "redis") || strings.HasPrefix(url, "unix://") {
		return store.NewRedis(store.RedisOptions{URL: url, Logger: log.Named("store")})
	}
	return store.Open(url)
}

func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrClosed)
}

// stateKey is the key sealing the requestState modern agents hold while
// a legacy server waits for their input: the gateway's state_key, else
// NEXUS_STATE_KEY, else nil (the gateway makes one and warns). The key
// is never printed.
func (a *app) stateKey(gw *config.Gateway) ([]byte, error) {
	text, from := gw.StateKey, "the gateway's state_key"
	if text == "" {
		text, from = os.Getenv(config.StateKeyEnv), config.StateKeyEnv
	}
	if text == "" {
		return nil, nil
	}
	key, err := config.ParseStateKey(text)
	if err != nil {
		return nil, usageErr("%s: %v; make one with: openssl rand -hex 32", from, err)
	}
	return key, nil
}

// lockWatch is how often nexus serve looks at its lockfile for a change
// another replica (or nexus lock) made: a stat, so cheap; soon enough
// that an accepted tool works everywhere within a couple of seconds.
const lockWatch = time.Second
