package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/sdk/plugin"
	"github.com/nexus-mcp/nexus/sdk/plugin/plugintest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

// sshServer is an SSH server on loopback whose only command is
// "nexus testserver" (plugintest's echo server, in process, over the
// session's stdin and stdout); any other command prints "command not
// found" and exits 127.
type sshServer struct {
	addr    string
	hostKey ssh.Signer
	ln      net.Listener
	mcp     *mcp.Server
	wg      sync.WaitGroup
}

func newKey(t *testing.T) (ssh.Signer, ed25519.PrivateKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, priv
}

func startSSH(t *testing.T, authorized ssh.PublicKey) *sshServer {
	t.Helper()
	hostKey, _ := newKey(t)
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if string(k.Marshal()) == string(authorized.Marshal()) {
			return nil, nil
		}
		return nil, errors.New("unknown key")
	}}
	cfg.AddHostKey(hostKey)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sshServer{addr: ln.Addr().String(), hostKey: hostKey, ln: ln, mcp: plugintest.EchoServer()}
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(nc, cfg)
			}()
		}
	}()
	return s
}

func (s *sshServer) serve(nc net.Conn, cfg *ssh.ServerConfig) {
	defer nc.Close()
	sc, chans, reqs, err := ssh.NewServerConn(nc, cfg)
	if err != nil {
		return
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	for nch := range chans {
		if nch.ChannelType() != "session" {
			nch.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nch.Accept()
		if err != nil {
			return
		}
		go func() {
			defer ch.Close()
			for req := range creqs {
				if req.Type != "exec" {
					req.Reply(false, nil)
					continue
				}
				var p struct{ Command string }
				ssh.Unmarshal(req.Payload, &p)
				req.Reply(true, nil)
				status := 0
				if p.Command == "nexus testserver" {
					s.mcp.Serve(context.Background(), mcp.NewStreamConn(ch, ch, plugin.MaxFrameSize))
				} else {
					fmt.Fprintf(ch.Stderr(), "bash: %s: command not found\n", strings.Fields(p.Command)[0])
					status = 127
				}
				ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(status)}))
				return
			}
		}()
	}
}

// knownHosts writes a known_hosts file holding key for the server.
func (s *sshServer) knownHosts(t *testing.T, key ssh.PublicKey) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(s.addr)}, key)
	if err := os.WriteFile(p, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeKey(t *testing.T, priv ed25519.PrivateKey) string {
	t.Helper()
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (s *sshServer) config(extra map[string]any) map[string]any {
	host, port, _ := net.SplitHostPort(s.addr)
	var p int
	fmt.Sscan(port, &p)
	c := map[string]any{"host": host, "port": p, "user": "nexus", "command": "nexus testserver"}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

func dial(t *testing.T, p *plugintest.Plugin, cfg map[string]any) (*mcp.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	conn, err := p.Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return c, nil
}

func echo(t *testing.T, c *mcp.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, "echo", map[string]any{"message": "over ssh"}, nil)
	if err != nil || len(res.Content) == 0 || res.Content[0].Text != "echo: over ssh" {
		t.Fatalf("echo: %+v %v", res, err)
	}
}

func TestKeyAuth(t *testing.T) {
	user, priv := newKey(t)
	srv := startSSH(t, user.PublicKey())
	p := plugintest.Start(t, ".", "ssh")
	c, err := dial(t, p, srv.config(map[string]any{"identity_file": writeKey(t, priv), "known_hosts": srv.knownHosts(t, srv.hostKey.PublicKey())}))
	if err != nil {
		t.Fatal(err)
	}
	echo(t, c)
}

func TestAgentAuth(t *testing.T) {
	user, priv := newKey(t)
	srv := startSSH(t, user.PublicKey())
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go agent.ServeAgent(keyring, c)
		}
	}()
	p := plugintest.Start(t, ".", "ssh")
	c, err := dial(t, p, srv.config(map[string]any{"agent_socket": sock, "known_hosts": []any{srv.knownHosts(t, srv.hostKey.PublicKey())}}))
	if err != nil {
		t.Fatal(err)
	}
	echo(t, c)
}

func TestRefusals(t *testing.T) {
	user, priv := newKey(t)
	srv := startSSH(t, user.PublicKey())
	p := plugintest.Start(t, ".", "ssh")
	keyFile := writeKey(t, priv)
	other, otherPriv := newKey(t)
	good := srv.knownHosts(t, srv.hostKey.PublicKey())

	cases := []struct {
		name string
		cfg  map[string]any
		want []string
	}{
		{"unknown host", srv.config(map[string]any{"identity_file": keyFile, "known_hosts": filepath.Join(t.TempDir(), "empty")}), nil},
		{"host key mismatch", srv.config(map[string]any{"identity_file": keyFile, "known_hosts": srv.knownHosts(t, other.PublicKey())}),
			[]string{"HOST KEY MISMATCH", "someone may be intercepting"}},
		{"wrong key", srv.config(map[string]any{"identity_file": writeKey(t, otherPriv), "known_hosts": good}),
			[]string{"authentication failed"}},
		{"remote command missing", srv.config(map[string]any{"identity_file": keyFile, "known_hosts": good, "command": "mcp-server-git --stdio"}),
			[]string{`remote command "mcp-server-git --stdio" exited with status 127`, "mcp-server-git: command not found"}},
	}
	empty := filepath.Join(filepath.Dir(cases[0].cfg["known_hosts"].(string)), "empty")
	os.WriteFile(empty, nil, 0o600)
	cases[0].want = []string{"is not in known_hosts", "if you trust it, add: [127.0.0.1]:"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dial(t, p, tc.cfg)
			if err == nil {
				t.Fatal("connected")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	// Neither a key nor an agent: the schema says so, with the source.
	// The report the host shows, with the config's source.
	_, err := dial(t, p, srv.config(map[string]any{"known_hosts": good}))
	var ce *plugintest.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "nexus.hcl (project config), line 10") {
		t.Errorf("no auth: %v", err)
	}
}
