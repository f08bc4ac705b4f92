package auth

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuthorizationServerMigration is auth/authorization-server-migration:
// after the server's PRM names a new authorization server, the client
// registers there, and the first one's client id and token go nowhere near
// it (SEP-2352). Both registrations stay in the store, each under its
// issuer.
func TestAuthorizationServerMigration(t *testing.T) {
	as1, as2 := newFakeAS(t), newFakeAS(t)
	for _, a := range []*fakeAS{as1, as2} {
		a.regSecret = true
		a.authMethods = []string{authBasic}
		a.alwaysRefresh = true // a refresh token the client must not take to as2
	}
	rs := newFakeRS(t, as1)
	rs.moveTo = as2
	dir := t.TempDir()
	c := newTestClient(t, rs, func(cfg *Config) { cfg.TokenDir = dir })
	mustCall(t, c, rs.url()) // as1: registers, logs in; the server then moves
	mustCall(t, c, rs.url()) // the as1 token is refused: as2
	as1.checkNoFailures()
	as2.checkNoFailures()

	_, _, regs1, _ := as1.snapshot()
	authz2, toks2, regs2, _ := as2.snapshot()
	if len(regs1) != 1 || len(regs2) != 1 {
		t.Fatalf("registrations: %d at as1, %d at as2; want one each", len(regs1), len(regs2))
	}
	old, _ := regs1[0]["_client_id"].(string)
	if old == "" {
		t.Fatal("as1 recorded no client id")
	}
	for _, q := range authz2 {
		if q.Get("client_id") == old {
			t.Errorf("as1's client id reached as2's authorization endpoint")
		}
	}
	for _, tr := range toks2 {
		if tr.basicUser == old || tr.form.Get("client_id") == old || tr.form.Get("refresh_token") != "" {
			t.Errorf("as1's credentials reached as2's token endpoint: %+v", tr.form)
		}
	}
	st := c.Status()
	if st.Issuer != as2.issuer() || !st.LoggedIn {
		t.Errorf("status %+v, want logged in at %s", st, as2.issuer())
	}
	c.mu.Lock()
	regs := c.rec.Registrations
	c.mu.Unlock()
	if regs[as1.issuer()] == nil || regs[as2.issuer()] == nil || regs[as2.issuer()].Issuer != as2.issuer() {
		t.Errorf("registrations by issuer: %+v", regs)
	}
}

// TestPreRegisteredBoundToIssuer: a pre-registered client is used with
// its authorization server only: the configured issuer, else the one it
// was first used with. A move is an error naming both, and the new
// authorization server sees nothing.
func TestPreRegisteredBoundToIssuer(t *testing.T) {
	t.Run("configured", func(t *testing.T) {
		as := newFakeAS(t)
		as.clients["cc"] = "s3cret"
		rs := newFakeRS(t, as)
		c := newTestClient(t, rs, func(cfg *Config) {
			cfg.Grant, cfg.ClientID, cfg.ClientSecret = GrantClientCredentials, "cc", "s3cret"
			cfg.Issuer = "https://as.example.com"
		})
		_, err := call(t, ctxT(t), c, rs.url())
		if !errors.Is(err, ErrIssuerChanged) || !strings.Contains(Explain(err).Error(), "https://as.example.com") {
			t.Fatalf("error %v, want ErrIssuerChanged naming the configured issuer", err)
		}
		if _, toks, _, _ := as.snapshot(); len(toks) != 0 {
			t.Errorf("%d token requests with a client of another issuer", len(toks))
		}
		checkGolden(t, "issuer_changed", err, names(rs, as)...)
	})
	t.Run("learned", func(t *testing.T) {
		as1, as2 := newFakeAS(t), newFakeAS(t)
		as1.clients["cc"], as2.clients["cc"] = "s3cret", "s3cret"
		rs := newFakeRS(t, as1)
		rs.moveTo = as2
		dir := t.TempDir()
		mod := func(cfg *Config) {
			cfg.Grant, cfg.ClientID, cfg.ClientSecret = GrantClientCredentials, "cc", "s3cret"
			cfg.TokenDir = dir
		}
		c := newTestClient(t, rs, mod)
		mustCall(t, c, rs.url())
		// A new process, same store: the binding was persisted.
		c2 := newTestClient(t, rs, mod)
		_, err := call(t, ctxT(t), c2, rs.url())
		if !errors.Is(err, ErrIssuerChanged) {
			t.Fatalf("error %v, want ErrIssuerChanged", err)
		}
		if _, toks, _, _ := as2.snapshot(); len(toks) != 0 {
			t.Errorf("the client of as1 was presented to as2 %d times", len(toks))
		}
		// Pinning the new issuer is the documented way to accept the move.
		c3 := newTestClient(t, rs, func(cfg *Config) { mod(cfg); cfg.Issuer = as2.issuer() })
		mustCall(t, c3, rs.url())
	})
}

// TestClientAuthGate: whatever the caller, a client's credentials are not
// sent to another authorization server.
func TestClientAuthGate(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, nil)
	ci := &clientInfo{ClientID: "a", ClientSecret: "s", AuthMethod: authBasic, Issuer: "https://as1.example"}
	if _, _, _, err := c.clientAuth(&ServerMetadata{Issuer: "https://as2.example"}, ci); err == nil {
		t.Fatal("credentials of as1 were prepared for as2")
	}
	if _, secret, _, err := c.clientAuth(&ServerMetadata{Issuer: "https://as1.example"}, ci); err != nil || secret != "s" {
		t.Fatalf("same issuer: %q %v", secret, err)
	}
}

// TestStoreMigratesVersion1: a token file written before credentials were
// bound to issuers still loads, its token is used without a login, and
// its clients now carry their issuer.
func TestStoreMigratesVersion1(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	dir := t.TempDir()
	c := newTestClient(t, rs, func(cfg *Config) { cfg.TokenDir = dir })
	mustCall(t, c, rs.url())
	path := c.Status().File

	// Rewrite it in the version 1 shape: no issuer on the clients.
	var m map[string]any
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["version"] = 1
	delete(m["client"].(map[string]any), "issuer")
	for _, r := range m["registrations"].(map[string]any) {
		delete(r.(map[string]any), "issuer")
	}
	b, _ = json.Marshal(m)
	if err := os.WriteFile(filepath.Clean(path), b, 0o600); err != nil {
		t.Fatal(err)
	}

	c2 := newTestClient(t, rs, func(cfg *Config) {
		cfg.TokenDir = dir
		cfg.Opener = func(context.Context, string) error { return errors.New("no login expected") }
	})
	c2.mu.Lock()
	rec := c2.rec
	c2.mu.Unlock()
	if rec == nil || rec.Token == nil {
		t.Fatal("the version 1 file was not loaded")
	}
	if rec.Client.Issuer != as.issuer() || rec.Registrations[as.issuer()].Issuer != as.issuer() {
		t.Errorf("not migrated: client issuer %q, registration %+v", rec.Client.Issuer, rec.Registrations)
	}
	mustCall(t, c2, rs.url())
	if authz, _, regs, _ := as.snapshot(); len(authz) != 1 || len(regs) != 1 {
		t.Errorf("%d logins and %d registrations, want the stored ones used", len(authz), len(regs))
	}
}
