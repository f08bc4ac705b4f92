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
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/nexus-mcp/nexus/sdk/plugin"
)

// Version of the plugin, shown by `nexus plugin inspect`.
const Version = "1.0.0"

func main() {
	plugin.Serve(plugin.Options{Name: "transport-ssh", Version: Version, Transport: transport{}})
}

const schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["host", "user", "command", "known_hosts"],
  "additionalProperties": false,
  "properties": {
    "host": {"type": "string", "minLength": 1, "description": "SSH server host name or address"},
    "port": {"type": "integer", "minimum": 1, "maximum": 65535, "description": "default 22"},
    "user": {"type": "string", "minLength": 1},
    "command": {"type": "string", "minLength": 1, "description": "remote command that runs a stdio MCP server, e.g. \"nexus testserver\""},
    "known_hosts": {
      "oneOf": [{"type": "string", "minLength": 1}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
      "description": "known_hosts file(s) the server's host key must be in"
    },
    "identity_file": {"type": "string", "description": "private key file (OpenSSH or PEM)"},
    "passphrase": {"type": "string", "description": "passphrase of identity_file"},
    "agent_socket": {"type": "string", "description": "SSH agent socket, in HCL: env(\"SSH_AUTH_SOCK\")"},
    "connect_timeout": {"type": "string", "pattern": "^[0-9.]+(ms|s|m)$", "description": "default 10s"},
    "keepalive_interval": {"type": "string", "pattern": "^[0-9.]+(ms|s|m)$", "description": "default 30s; 0s turns it off"}
  },
  "anyOf": [{"required": ["identity_file"]}, {"required": ["agent_socket"]}]
}`

type config struct {
	Host              string          `json:"host"`
	Port              int             `json:"port"`
	User              string          `json:"user"`
	Command           string          `json:"command"`
	KnownHosts        json.RawMessage `json:"known_hosts"`
	IdentityFile      string          `json:"identity_file"`
	Passphrase        string          `json:"passphrase"`
	AgentSocket       string          `json:"agent_socket"`
	ConnectTimeout    string          `json:"connect_timeout"`
	KeepaliveInterval string          `json:"keepalive_interval"`
}

type transport struct{}

var (
	_ plugin.Transport      = transport{}
	_ plugin.SchemaProvider = transport{}
)

func (transport) ConfigSchema() json.RawMessage { return json.RawMessage(schema) }

func (c *config) knownHostsFiles() ([]string, error) {
	var one string
	if json.Unmarshal(c.KnownHosts, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(c.KnownHosts, &many); err != nil || len(many) == 0 {
		return nil, errors.New("config: known_hosts must be a file or a list of files")
	}
	return many, nil
}

func duration(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	return time.ParseDuration(s)
}

// auth builds the authentication methods: the key file, then the agent.
func (c *config) auth() ([]ssh.AuthMethod, func(), error) {
	var methods []ssh.AuthMethod
	cleanup := func() {}
	if c.IdentityFile != "" {
		pem, err := os.ReadFile(c.IdentityFile)
		if err != nil {
			return nil, cleanup, fmt.Errorf("identity_file: %v", err)
		}
		var signer ssh.Signer
		if c.Passphrase != "" {
			signer, err = ssh.ParsePrivateKeyWithPassphrase(pem, []byte(c.Passphrase))
		} else {
			signer, err = ssh.ParsePrivateKey(pem)
		}
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, cleanup, fmt.Errorf("identity_file %s is encrypted: set passphrase, or use agent_socket", c.IdentityFile)
		}
		if err != nil {
			return nil, cleanup, fmt.Errorf("identity_file %s: %v", c.IdentityFile, err)
		}
		methods = append(methods, ssh.PublicKeys(signer))
	}
	if c.AgentSocket != "" {
		conn, err := net.Dial("unix", c.AgentSocket)
		if err != nil {
			return nil, cleanup, fmt.Errorf("agent_socket: cannot reach the SSH agent: %v", err)
		}
		cleanup = func() { conn.Close() }
		methods = append(methods, ssh.PublicKeysCallback(agent.NewClient(conn).Signers))
	}
	return methods, cleanup, nil
}

func (transport) Open(ctx context.Context, raw json.RawMessage) (plugin.Conn, error) {
	var c config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	if c.Port == 0 {
		c.Port = 22
	}
	files, err := c.knownHostsFiles()
	if err != nil {
		return nil, err
	}
	hostKeys, err := knownhosts.New(files...)
	if err != nil {
		return nil, fmt.Errorf("known_hosts: %v", err)
	}
	timeout, err := duration(c.ConnectTimeout, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("config: connect_timeout: %v", err)
	}
	keepalive, err := duration(c.KeepaliveInterval, 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("config: keepalive_interval: %v", err)
	}
	methods, cleanupAgent, err := c.auth()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	cfg := &ssh.ClientConfig{
		User:            c.User,
		Auth:            methods,
		HostKeyCallback: hostKeyChecker(hostKeys, files),
		Timeout:         timeout,
	}
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nc, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		cleanupAgent()
		return nil, fmt.Errorf("ssh %s@%s: %v", c.User, addr, err)
	}
	nc.SetDeadline(time.Now().Add(timeout))
	sc, chans, reqs, err := ssh.NewClientConn(nc, addr, cfg)
	if err != nil {
		nc.Close()
		cleanupAgent()
		return nil, fmt.Errorf("ssh %s@%s: %v", c.User, addr, explainHandshake(err))
	}
	nc.SetDeadline(time.Time{})
	client := ssh.NewClient(sc, chans, reqs)
	sess, err := client.NewSession()
	if err != nil {
		client.Close()
		cleanupAgent()
		return nil, fmt.Errorf("ssh %s@%s: opening a session: %v", c.User, addr, err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		client.Close()
		cleanupAgent()
		return nil, err
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		client.Close()
		cleanupAgent()
		return nil, err
	}
	conn := &conn{client: client, sess: sess, stdin: stdin, r: bufio.NewReaderSize(stdout, 64<<10),
		stderr: &tailWriter{}, done: make(chan struct{}), cleanup: cleanupAgent, command: c.Command}
	sess.Stderr = conn.stderr
	if err := sess.Start(c.Command); err != nil {
		conn.Close()
		return nil, fmt.Errorf("ssh %s@%s: starting %q: %v", c.User, addr, c.Command, err)
	}
	go conn.wait()
	if keepalive > 0 {
		go conn.keepalive(keepalive)
	}
	return conn, nil
}

// hostKeyChecker wraps knownhosts with errors that say what to do.
func hostKeyChecker(check ssh.HostKeyCallback, files []string) ssh.HostKeyCallback {
	return func(host string, remote net.Addr, key ssh.PublicKey) error {
		err := check(host, remote, key)
		var ke *knownhosts.KeyError
		if errors.As(err, &ke) {
			fp := ssh.FingerprintSHA256(key)
			if len(ke.Want) == 0 {
				return fmt.Errorf("host key of %s (%s %s) is not in known_hosts (%s); if you trust it, add: %s",
					host, key.Type(), fp, strings.Join(files, ", "), knownhosts.Line([]string{knownhosts.Normalize(host)}, key))
			}
			return fmt.Errorf("HOST KEY MISMATCH for %s: it offered %s %s, but known_hosts (%s:%d) has another key; someone may be intercepting the connection, or the host was reinstalled",
				host, key.Type(), fp, ke.Want[0].Filename, ke.Want[0].Line)
		}
		return err
	}
}

func explainHandshake(err error) error {
	if strings.Contains(err.Error(), "unable to authenticate") {
		return fmt.Errorf("authentication failed: the server accepted none of the keys offered (identity_file / agent_socket): %v", err)
	}
	return err
}

// maxStderr is how much of the remote command's stderr is kept for errors.
const maxStderr = 8 << 10

// tailWriter keeps the end of the remote stderr and logs each write.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > maxStderr {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-maxStderr:]...)
	}
	t.mu.Unlock()
	plugin.Logger().Debug("remote stderr", "text", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (t *tailWriter) lastLines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// conn is a plugin.Conn over an SSH session running a stdio MCP server.
type conn struct {
	client  *ssh.Client
	sess    *ssh.Session
	stdin   io.WriteCloser
	r       *bufio.Reader
	stderr  *tailWriter
	cleanup func()
	command string

	wmu  sync.Mutex
	once sync.Once
	line []byte

	done    chan struct{}
	waitErr error
	closed  bool
	cmu     sync.Mutex
}

func (c *conn) wait() {
	err := c.sess.Wait()
	c.cmu.Lock()
	c.waitErr = err
	c.cmu.Unlock()
	close(c.done)
}

func (c *conn) keepalive(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		if _, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil); err != nil {
			c.client.Close()
			return
		}
	}
}

// ReadMessage returns the next non-blank line of the remote stdout.
func (c *conn) ReadMessage() ([]byte, error) {
	for {
		c.line = c.line[:0]
		for {
			frag, err := c.r.ReadSlice('\n')
			if len(c.line)+len(frag) > plugin.MaxFrameSize+2 {
				return nil, fmt.Errorf("the remote server sent a line over the %d-byte frame limit", plugin.MaxFrameSize)
			}
			c.line = append(c.line, frag...)
			if err == nil {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if errors.Is(err, io.EOF) && len(bytes.TrimSpace(c.line)) > 0 {
				return bytes.TrimSpace(c.line), nil
			}
			return nil, c.endErr(err)
		}
		if l := bytes.TrimSpace(c.line); len(l) > 0 {
			return l, nil
		}
	}
}

// exitWait bounds how long the end of the remote stdout waits for the
// command's exit status, which the server sends after it: on a loaded
// machine that can take seconds, and without it the host learns only
// "EOF" instead of why the command ended.
const exitWait = 10 * time.Second

// endErr explains the end of the remote stdout: the command's exit status
// and the last lines of its stderr.
func (c *conn) endErr(err error) error {
	timer := time.NewTimer(exitWait)
	defer timer.Stop()
	waited := false
	select {
	case <-c.done:
		waited = true
	case <-timer.C:
	}
	c.cmu.Lock()
	werr, closed := c.waitErr, c.closed
	c.cmu.Unlock()
	if closed {
		return io.EOF
	}
	if !waited {
		msg := fmt.Sprintf("remote command %q closed its output, and its exit status did not arrive within %s", c.command, exitWait)
		if s := c.stderr.lastLines(3); s != "" {
			msg += "; its stderr: " + s
		}
		return errors.New(msg)
	}
	var ee *ssh.ExitError
	if errors.As(werr, &ee) {
		msg := fmt.Sprintf("remote command %q exited with status %d", c.command, ee.ExitStatus())
		if s := c.stderr.lastLines(3); s != "" {
			msg += "; its stderr: " + s
		}
		return errors.New(msg)
	}
	if werr == nil && errors.Is(err, io.EOF) {
		return io.EOF
	}
	if werr != nil {
		return fmt.Errorf("ssh session ended: %v", werr)
	}
	return fmt.Errorf("ssh: %v", err)
}

func (c *conn) WriteMessage(_ context.Context, msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	b := make([]byte, 0, len(msg)+1)
	b = append(append(b, msg...), '\n')
	if _, err := c.stdin.Write(b); err != nil {
		// The remote command is gone: say why rather than "EOF".
		if eerr := c.endErr(err); eerr != io.EOF {
			return eerr
		}
		return err
	}
	return nil
}

func (c *conn) Close() error {
	c.once.Do(func() {
		c.cmu.Lock()
		c.closed = true
		c.cmu.Unlock()
		c.stdin.Close()
		c.sess.Close()
		c.client.Close()
		c.cleanup()
	})
	return nil
}
