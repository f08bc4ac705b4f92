package gateway_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/testenv"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// Paths of the gateway that only fail in the field: a listener that
// cannot be had, TLS files that do not load, /readyz's required servers,
// the OAuth verifier's refusals, resources through the gateway, the
// chain on resources/read and prompts/get, and a damaged session record.

// ListenAndServe says why it cannot listen, with a fix for each cause,
// and never reports itself listening.
func TestListenAndServeErrors(t *testing.T) {
	e := newEnv(t, nil)
	hh, err := e.g.HTTP(gateway.HTTPOptions{Agent: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hh.Close() })
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		addr string
		want []string
	}{
		{busy.Addr().String(), []string{"cannot listen on " + busy.Addr().String(), "another process is using the port"}},
		{"127.0.0.1", []string{"cannot listen on 127.0.0.1", "give --listen (or the gateway block's listen) as host:port"}},
		// TEST-NET-1 (RFC 5737): no machine's own address; binding to it
		// fails at once, no packet leaves.
		{"192.0.2.1:0", []string{"cannot listen on 192.0.2.1:0", "this machine has no such address"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := hh.ListenAndServe(ctx, gateway.ListenOptions{Addr: c.addr, Ready: func(a net.Addr) { t.Errorf("%s: listening on %s", c.addr, a) }})
		cancel()
		if err == nil {
			t.Fatalf("%s: no error", c.addr)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the error lacks %q:\n%v", c.addr, w, err)
			}
		}
	}
}

// A certificate and key that do not load end Serve with an error naming
// both files, before it serves anything, and the listener it was given is
// closed (its port is free again).
func TestServeTLSKeyErrors(t *testing.T) {
	e := newEnv(t, nil)
	hh, err := e.g.HTTP(gateway.HTTPOptions{Agent: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hh.Close() })
	dir, other := t.TempDir(), t.TempDir()
	cert, key, _ := selfSigned(t, dir)
	_, otherKey, _ := selfSigned(t, other)
	garbage := dir + "/garbage.pem"
	if err := os.WriteFile(garbage, []byte("-----BEGIN EC PRIVATE KEY-----\nbm90IGEga2V5\n-----END EC PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loading := func(cert, key string) string { return "loading the TLS certificate " + cert + " and key " + key }
	for _, c := range []struct {
		name, cert, key, want string
	}{
		{"key file missing", cert, dir + "/missing.pem", loading(cert, dir+"/missing.pem")},
		{"key of another certificate", cert, otherKey, loading(cert, otherKey)},
		{"key not a key", cert, garbage, loading(cert, garbage)},
		// Named, not an empty path in the message.
		{"certificate without a key", cert, "", "TLS has a certificate " + cert + " but no key: HTTPS needs both"},
		{"key without a certificate", "", key, "TLS has a key " + key + " but no certificate: HTTPS needs both"},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = hh.Serve(ctx, ln, gateway.ListenOptions{TLSCert: c.cert, TLSKey: c.key, Ready: func(a net.Addr) { t.Errorf("%s: serving on %s", c.name, a) }})
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
		// Bounded: a listener left open would otherwise block Accept.
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s: the listener was left open (Accept: %v)", c.name, err)
		}
	}
}

// /readyz is ready when every required server answers a ping, else 503
// naming each that does not (one that fails to start, one the config does
// not have) and not the ones that do; a server that is down but not
// required leaves it ready, and is named.
func TestReadyRequiredServers(t *testing.T) {
	e := newEnvOpts(t, func(c *config.Config) {
		c.Servers = append(c.Servers, &config.Server{Name: "broken", Type: config.TypeStdio, Command: []string{"no-such-command"}, Enabled: true})
	}, func(ho *engine.Options) {
		inner := ho.Transport
		ho.Transport = func(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
			if srv.Name == "broken" {
				return nil, errors.New(`exec: "no-such-command": executable file not found in $PATH`)
			}
			return inner(ctx, srv)
		}
	})
	ready := func(required ...string) (int, map[string]any) {
		t.Helper()
		hh, err := e.g.HTTP(gateway.HTTPOptions{Agent: "claude", Required: required})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(hh)
		defer func() { hh.Close(); srv.CloseClientConnections(); srv.Close() }()
		resp, err := client.Get(srv.URL + gateway.ReadyPath)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
			t.Fatalf("/readyz body: %v", err)
		}
		return resp.StatusCode, body
	}
	failed := func(body map[string]any) (names []string) {
		list, _ := body["failed"].([]any)
		for _, f := range list {
			m, _ := f.(map[string]any)
			if s, _ := m["server"].(string); s != "" && m["error"] != "" {
				names = append(names, s)
			}
		}
		slices.Sort(names)
		return names
	}

	code, body := ready("testserver", "broken", "ghost")
	if code != http.StatusServiceUnavailable || body["status"] != "not ready" || !slices.Equal(failed(body), []string{"broken", "ghost"}) {
		t.Errorf("with broken and ghost required: %d %v", code, body)
	}
	code, body = ready("testserver", "probe")
	if code != http.StatusOK || body["status"] != "ready" {
		t.Fatalf("with the working servers required: %d %v", code, body)
	}
	// broken is not required, so ready; but the body names it, its start
	// having failed (when it was required above).
	code, body = ready("testserver")
	if code != http.StatusOK || !strings.Contains(jsonOf(body["servers_down"]), `"server":"broken"`) {
		t.Errorf("with broken down but not required: %d %v", code, body)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// issuer is a JWKS endpoint on loopback and a signer of tokens with its
// key (kid k1). The caller closes it before the test's cleanups, which
// count goroutines.
type issuer struct {
	*httptest.Server
	url string
	key *rsa.PrivateKey
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		enc := base64.RawURLEncoding.EncodeToString
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "k1", "n": enc(key.N.Bytes()), "e": enc(big.NewInt(int64(key.E)).Bytes())}}})
	}))
	return &issuer{Server: idp, url: idp.URL, key: key}
}

// sign makes an RS256 token with claims, signed by key (the issuer's when
// nil).
func (is *issuer) sign(claims jwt.MapClaims, key *rsa.PrivateKey) string {
	if key == nil {
		key = is.key
	}
	j := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	j.Header["kid"] = "k1"
	s, _ := j.SignedString(key)
	return s
}

// The verifier's refusals reach the client as RFC 6750 answers: 401 with
// error="invalid_token" and the reason for a token that is not the
// gateway's to accept, 403 with error="insufficient_scope" and the scope
// for one that lacks it; both point at the metadata. A token with the
// scope gets in.
func TestOAuthRefusals(t *testing.T) {
	is := newIssuer(t)
	defer is.Close()
	henv := oauthGateway(t, is.url, func(oc *config.GatewayOAuth) { oc.Scopes = []string{"mcp:tools"} })
	public := henv.url + "/mcp"
	meta := `resource_metadata="` + henv.url + `/.well-known/oauth-protected-resource/mcp"`
	claims := func(change func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"iss": is.url, "aud": public, "sub": "alice@example.com", "scope": "mcp:tools",
			"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
		if change != nil {
			change(c)
		}
		return c
	}
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(nil))
	hs.Header["kid"] = "k1"
	hsTok, _ := hs.SignedString([]byte("a shared secret"))

	for _, c := range []struct {
		name, token string
		status      int
		header      []string
		body        string
	}{
		{"not a JWT", "opaque-token", 401, []string{`error="invalid_token"`, meta}, "not a JWT"},
		{"another audience", is.sign(claims(func(c jwt.MapClaims) { c["aud"] = "https://elsewhere.example/mcp" }), nil), 401, []string{`error="invalid_token"`}, "token audience is"},
		{"another issuer", is.sign(claims(func(c jwt.MapClaims) { c["iss"] = "https://other-issuer.example" }), nil), 401, []string{`error="invalid_token"`}, "was issued by"},
		{"another key", is.sign(claims(nil), stranger), 401, []string{`error="invalid_token"`}, "signature does not verify"},
		{"a shared secret", hsTok, 401, []string{`error="invalid_token"`}, "shared-secret"},
		{"no expiry", is.sign(claims(func(c jwt.MapClaims) { delete(c, "exp") }), nil), 401, []string{`error="invalid_token"`}, "no expiry"},
		{"no scope", is.sign(claims(func(c jwt.MapClaims) { delete(c, "scope") }), nil), 403, []string{`error="insufficient_scope"`, `scope="mcp:tools"`, meta}, "lacks the scope mcp:tools"},
		{"the scope", is.sign(claims(nil), nil), 200, nil, `"serverInfo"`},
	} {
		r, body := henv.post(initBody, map[string]string{"Authorization": "Bearer " + c.token})
		if r.StatusCode != c.status || !strings.Contains(body, c.body) {
			t.Errorf("%s: %d %s; want %d and %q", c.name, r.StatusCode, body, c.status, c.body)
		}
		for _, h := range c.header {
			if !strings.Contains(r.Header.Get("WWW-Authenticate"), h) {
				t.Errorf("%s: WWW-Authenticate %q lacks %s", c.name, r.Header.Get("WWW-Authenticate"), h)
			}
		}
	}
}

// OAuth without a public URL is refused with the fix; without an oauth
// block it sets nothing.
func TestOAuthConfigRefusals(t *testing.T) {
	var o gateway.HTTPOptions
	err := gateway.OAuth(&config.Gateway{OAuth: &config.GatewayOAuth{Issuer: "https://issuer.example"}}, "", &o)
	if err == nil || !strings.Contains(err.Error(), "public_url") || o.Verifier != nil {
		t.Errorf("no public_url: %v (verifier %v)", err, o.Verifier)
	}
	if err := gateway.OAuth(&config.Gateway{}, "https://gw.example/mcp", &o); err != nil || o.Verifier != nil || o.Challenge != "" {
		t.Errorf("no oauth block: %v, options %+v", err, o)
	}
}

// watchEnv is newEnv plus the server "watch" (watchServer: watch://x and
// the tool touch) that the agent alice alone sees.
func watchEnv(t *testing.T) *env {
	t.Helper()
	var wg sync.WaitGroup
	sctx, stop := context.WithCancel(context.Background())
	e := newEnvOpts(t, func(c *config.Config) {
		c.Servers = append(c.Servers, &config.Server{Name: "watch", Type: config.TypeStdio, Command: []string{"watch"}, Enabled: true})
		c.Agents = append(c.Agents, &config.Agent{Name: "alice", Permission: "yolo", Servers: []string{"watch"}})
	}, func(o *engine.Options) {
		prev := o.Transport
		o.Transport = func(ctx context.Context, srv *config.Server) (mcp.Conn, error) {
			if srv.Command[0] != "watch" {
				return prev(ctx, srv)
			}
			client, server := mcp.Pipe()
			wg.Add(1)
			go func() { defer wg.Done(); watchServer().Serve(sctx, server) }()
			return client, nil
		}
	})
	t.Cleanup(func() { stop(); wg.Wait() })
	return e
}

// resources/list and resources/templates/list gather every server the
// agent sees, page by page (pages of 3), and only those; a subscribed
// client hears resources/updated from its server through the gateway.
func TestResourcesThroughGateway(t *testing.T) {
	e := watchEnv(t)
	ctx := ctxT(t)
	uris := func(c *mcp.Client) []string {
		t.Helper()
		rs, err := c.ListResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rs {
			out = append(out, r.URI)
		}
		slices.Sort(out)
		return out
	}
	claude := e.connect("claude", mcp.ClientOptions{})
	all := uris(claude)
	for _, want := range []string{"file:///readme.txt", "file:///config.json", "file:///data/users.csv", "watch://x"} {
		if !slices.Contains(all, want) {
			t.Errorf("claude's resources lack %s: %q", want, all)
		}
	}
	if len(all) <= 3 {
		t.Errorf("%d resources: the page size (3) was not crossed, so paging went untested: %q", len(all), all)
	}
	if len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Errorf("a resource listed twice across pages: %q", all)
	}
	tmpls, err := claude.ListResourceTemplates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tm := range tmpls {
		found = found || tm.URITemplate == "file:///users/{id}"
	}
	if !found {
		t.Errorf("claude's templates lack file:///users/{id}: %+v", tmpls)
	}

	updated := make(chan string, 16)
	alice := e.connect("alice", mcp.ClientOptions{OnResourceUpdated: func(uri string) { updated <- uri }})
	if got := uris(alice); !slices.Equal(got, []string{"watch://x"}) {
		t.Errorf("alice (watch only) lists %q", got)
	}
	if tm, err := alice.ListResourceTemplates(ctx); err != nil || len(tm) != 0 {
		t.Errorf("alice's templates: %+v %v; watch has none", tm, err)
	}
	if err := alice.Subscribe(ctx, "watch://x"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.CallTool(ctx, "mcp_watch_touch", nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updated:
		if uri != "watch://x" {
			t.Errorf("resources/updated for %q", uri)
		}
	case <-ctx.Done():
		t.Fatal("no resources/updated reached the subscribed client")
	}
}

// The chain runs on resources/read and prompts/get through the gateway as
// on tools/call: a policy denies (the reason reaches the agent) and
// modifies, and a sanitizer's change is what the agent gets, not the
// server's bytes passed on (the gateway answers an unchanged result with
// those).
func TestChainOnReadAndPromptThroughGateway(t *testing.T) {
	decide := func(name string, f func(e *event.Event) event.Decision) policy.Entry {
		return policy.Entry{Kind: policy.KindPolicy, Link: policy.Func{N: name, F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			return f(e), nil
		}}}
	}
	allow := event.Decision{Action: event.Allow}
	links := []policy.Entry{
		decide("no-config", func(e *event.Event) event.Decision {
			if e.Method == mcp.MethodResourcesRead && strings.Contains(string(e.Params), "config.json") {
				return event.Decision{Action: event.Deny, Reason: "config files are off limits"}
			}
			return allow
		}),
		decide("no-reviews", func(e *event.Event) event.Decision {
			if e.Method == mcp.MethodPromptsGet && strings.Contains(string(e.Params), "code_review") {
				return event.Decision{Action: event.Deny, Reason: "reviews are off limits"}
			}
			return allow
		}),
		decide("rename", func(e *event.Event) event.Decision {
			if e.Method == mcp.MethodPromptsGet && strings.Contains(string(e.Params), "Mallory") {
				return event.Decision{Action: event.Modify, Params: json.RawMessage(strings.ReplaceAll(string(e.Params), "Mallory", "Alice"))}
			}
			return allow
		}),
		{Kind: policy.KindSanitizer, Link: policy.Func{N: "stamp", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if e.Method != mcp.MethodResourcesRead && e.Method != mcp.MethodPromptsGet {
				return allow, nil
			}
			r := strings.ReplaceAll(string(e.Result), "Nexus test server", "[checked] Nexus test server")
			r = strings.ReplaceAll(r, "Alice", "[checked] Alice")
			return event.Decision{Action: event.Modify, Result: json.RawMessage(r)}, nil
		}}},
	}
	e := newEnvOpts(t, nil, func(o *engine.Options) { o.Links = links })
	c := e.connect("claude", mcp.ClientOptions{})
	ctx := ctxT(t)

	if _, err := c.ReadResource(ctx, "file:///config.json"); err == nil || !strings.Contains(err.Error(), "config files are off limits") {
		t.Errorf("a denied read: %v", err)
	}
	rr, err := c.ReadResource(ctx, "file:///readme.txt")
	if err != nil || len(rr.Contents) == 0 || !strings.Contains(rr.Contents[0].Text, "[checked] Nexus test server") {
		t.Errorf("a sanitized read: %v %+v", err, rr)
	}
	if _, err := c.GetPrompt(ctx, "mcp_testserver_code_review", map[string]string{"language": "go"}); err == nil || !strings.Contains(err.Error(), "reviews are off limits") {
		t.Errorf("a denied prompt: %v", err)
	}
	pr, err := c.GetPrompt(ctx, "mcp_testserver_greeting", map[string]string{"name": "Mallory"})
	if err != nil || len(pr.Messages) == 0 {
		t.Fatalf("a modified prompt: %v %+v", err, pr)
	}
	text := jsonOf(pr.Messages)
	if !strings.Contains(text, "[checked] Alice") || strings.Contains(text, "Mallory") {
		t.Errorf("the prompt was not renamed and stamped: %s", text)
	}
}

// A session record the store cannot read back is refused with a reason
// that names it, by the replica that did not open the session, which goes
// on serving others; the store's Get and Update report it and leave it as
// it is. One whose initialize params are damaged is refused naming them.
// Either way the client is told to start anew, not to retry.
func TestCorruptSessionRecord(t *testing.T) {
	url := testenv.RedisServer(t)
	st, err := store.NewRedis(store.RedisOptions{URL: url, Prefix: "corrupt:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	ctx := ctxT(t)
	rs := newReplicas(t, st, 2)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	hdr := func(sid string) map[string]string {
		return map[string]string{"Authorization": "Bearer claude-token", "Mcp-Session-Id": sid}
	}

	// The initialize params in the record are not params.
	sid := rs[0].open("claude-token")
	key := "corrupt:session:" + sid
	raw, err := rdb.Get(ctx, key).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	rec["init"] = json.RawMessage(`"not the initialize params"`)
	b, _ := json.Marshal(rec)
	if err := rdb.Set(ctx, key, b, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	_, body := rs[1].post(list, hdr(sid))
	// Asking again gets the same record: the answer says to start anew,
	// not to retry (it once said the store did not answer).
	if !strings.Contains(body, `"error"`) || !strings.Contains(body, "initialize params do not decode") ||
		!strings.Contains(body, "initialize a new session") || strings.Contains(body, "retry") || strings.Contains(body, `"tools"`) {
		t.Errorf("a record with damaged initialize params: %s", body)
	}

	// The record is not a session at all.
	sid = rs[0].open("claude-token")
	key = "corrupt:session:" + sid
	if err := rdb.Set(ctx, key, "not a session record", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	// 404 and no Retry-After: the client starts a new session (retrying
	// would read the same bytes; it once got 503 "retry").
	resp, body := rs[1].post(list, hdr(sid))
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Retry-After") != "" ||
		!strings.Contains(body, "the stored record is not a session") || !strings.Contains(body, sid) ||
		!strings.Contains(body, "initialize a new session") || strings.Contains(body, "retry") {
		t.Errorf("a record that is not a session: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if _, err := st.Get(ctx, sid); err == nil || !strings.Contains(err.Error(), "not a session") {
		t.Errorf("Get of the damaged record: %v", err)
	}
	err = st.Update(ctx, sid, time.Minute, func(*store.Session) error {
		t.Error("Update ran its function on a damaged record")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "not a session") {
		t.Errorf("Update of the damaged record: %v", err)
	}
	if got, _ := rdb.Get(ctx, key).Result(); got != "not a session record" {
		t.Errorf("the damaged record was overwritten with %q", got)
	}

	// The replica still serves a session of its own.
	own := rs[1].open("claude-token")
	if resp, body := rs[1].post(list, hdr(own)); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"tools"`) {
		t.Errorf("a sound session after the damaged ones: %d %s", resp.StatusCode, body)
	}
}
