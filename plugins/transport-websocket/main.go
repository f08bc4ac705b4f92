package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/nexus-mcp/nexus/sdk/plugin"
)

// Version of the plugin, shown by `nexus plugin inspect`.
const Version = "1.0.0"

const subprotocol = "mcp"

func main() {
	plugin.Serve(plugin.Options{Name: "transport-websocket", Version: Version, Transport: transport{}})
}

type tlsConfig struct {
	CAFile             string `json:"ca_file"`
	CertFile           string `json:"cert_file"`
	KeyFile            string `json:"key_file"`
	ServerName         string `json:"server_name"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify"`
}

type config struct {
	URL              string            `json:"url"`
	Headers          map[string]string `json:"headers"`
	TLS              *tlsConfig        `json:"tls"`
	PingInterval     string            `json:"ping_interval"`
	PingTimeout      string            `json:"ping_timeout"`
	HandshakeTimeout string            `json:"handshake_timeout"`
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["url"],
  "additionalProperties": false,
  "properties": {
    "url": {"type": "string", "pattern": "^wss?://", "description": "ws:// or wss:// URL of the MCP server"},
    "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "extra handshake headers"},
    "tls": {
      "type": "object",
      "additionalProperties": false,
      "properties": {
        "ca_file": {"type": "string"},
        "cert_file": {"type": "string"},
        "key_file": {"type": "string"},
        "server_name": {"type": "string"},
        "insecure_skip_verify": {"type": "boolean"}
      },
      "dependentRequired": {"cert_file": ["key_file"], "key_file": ["cert_file"]}
    },
    "ping_interval": {"type": "string", "pattern": "^[0-9.]+(ns|us|µs|ms|s|m|h)$", "description": "keepalive ping period, default 30s; 0s turns pings off"},
    "ping_timeout": {"type": "string", "pattern": "^[0-9.]+(ns|us|µs|ms|s|m|h)$", "description": "how long a pong may take, default 10s"},
    "handshake_timeout": {"type": "string", "pattern": "^[0-9.]+(ns|us|µs|ms|s|m|h)$", "description": "bound on connect and upgrade, default 10s"}
  }
}`

type transport struct{}

var (
	_ plugin.Transport      = transport{}
	_ plugin.SchemaProvider = transport{}
)

func (transport) ConfigSchema() json.RawMessage { return json.RawMessage(schema) }

func duration(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	return time.ParseDuration(s)
}

func (transport) Open(ctx context.Context, raw json.RawMessage) (plugin.Conn, error) {
	var c config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return nil, fmt.Errorf("config: url %q is not a ws:// or wss:// URL", c.URL)
	}
	ping, err := duration(c.PingInterval, 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("config: ping_interval: %v", err)
	}
	pingTimeout, err := duration(c.PingTimeout, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("config: ping_timeout: %v", err)
	}
	hsTimeout, err := duration(c.HandshakeTimeout, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("config: handshake_timeout: %v", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // a proxy would come from the environment, which the host sanitizes anyway
	if c.TLS != nil {
		tc, err := buildTLS(c.TLS)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = tc
	}
	h := http.Header{}
	for k, v := range c.Headers {
		h.Set(k, v)
	}
	dctx, cancel := context.WithTimeout(ctx, hsTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(dctx, c.URL, &websocket.DialOptions{
		HTTPClient:   &http.Client{Transport: tr, Timeout: hsTimeout},
		HTTPHeader:   h,
		Subprotocols: []string{subprotocol},
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, fmt.Errorf("connecting to %s: the server answered %s instead of upgrading to WebSocket", redact(u), resp.Status)
		}
		return nil, fmt.Errorf("connecting to %s: %v", redact(u), err)
	}
	if ws.Subprotocol() != subprotocol {
		ws.Close(websocket.StatusProtocolError, "subprotocol mcp required")
		return nil, fmt.Errorf("connecting to %s: the server did not accept the WebSocket subprotocol %q", redact(u), subprotocol)
	}
	ws.SetReadLimit(plugin.MaxFrameSize)
	return newConn(ws, ping, pingTimeout), nil
}

// redact drops credentials from a URL before it goes into a message.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	return c.String()
}

func buildTLS(c *tlsConfig) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify}
	if c.InsecureSkipVerify {
		plugin.Logger().Warn("tls.insecure_skip_verify is set: the server's certificate is not checked")
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("config: tls.ca_file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("config: tls.ca_file %s holds no PEM certificate", c.CAFile)
		}
		tc.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("config: tls.cert_file/key_file: %v", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// conn is a plugin.Conn over a WebSocket with ping keepalive.
type conn struct {
	ws     *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once

	mu      sync.Mutex
	pingErr error
}

func newConn(ws *websocket.Conn, interval, timeout time.Duration) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{ws: ws, ctx: ctx, cancel: cancel}
	if interval > 0 {
		go c.keepalive(interval, timeout)
	}
	return c
}

// keepalive pings the server; a pong that does not come in time ends the
// session with an error that says so.
func (c *conn) keepalive(interval, timeout time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(c.ctx, timeout)
		err := c.ws.Ping(pctx)
		cancel()
		if err != nil && c.ctx.Err() == nil {
			c.mu.Lock()
			c.pingErr = fmt.Errorf("keepalive: the server did not answer a ping within %v; the connection is considered dead", timeout)
			c.mu.Unlock()
			c.ws.CloseNow()
			return
		}
	}
}

func (c *conn) ReadMessage() ([]byte, error) {
	typ, b, err := c.ws.Read(c.ctx)
	if err != nil {
		c.mu.Lock()
		pingErr := c.pingErr
		c.mu.Unlock()
		switch {
		case pingErr != nil:
			return nil, pingErr
		case c.ctx.Err() != nil:
			return nil, io.EOF
		case websocket.CloseStatus(err) == websocket.StatusNormalClosure, websocket.CloseStatus(err) == websocket.StatusGoingAway:
			return nil, io.EOF
		case errors.Is(err, websocket.ErrMessageTooBig):
			return nil, fmt.Errorf("the server sent a message over the %d-byte limit", plugin.MaxFrameSize)
		}
		return nil, fmt.Errorf("websocket: %v", err)
	}
	if typ != websocket.MessageText {
		return nil, errors.New("websocket: the server sent a binary frame; MCP messages travel as text frames")
	}
	return b, nil
}

func (c *conn) WriteMessage(ctx context.Context, msg []byte) error {
	return c.ws.Write(ctx, websocket.MessageText, msg)
}

func (c *conn) Close() error {
	c.once.Do(func() {
		c.cancel()
		c.ws.Close(websocket.StatusNormalClosure, "")
	})
	return nil
}
