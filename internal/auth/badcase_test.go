package auth

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/diag"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// checkGolden compares a rendered report with testdata/NAME.golden, after
// replacing the test servers' random addresses with fixed names.
func checkGolden(t *testing.T, name string, err error, repl ...string) {
	t.Helper()
	var r *diag.Report
	if !errors.As(Explain(err), &r) {
		t.Fatalf("error has no report: %T %v", err, err)
	}
	got := r.Error() + "\n"
	got = strings.NewReplacer(repl...).Replace(got)
	got = regexp.MustCompile(`127\.0\.0\.1:\d+`).ReplaceAllString(got, "127.0.0.1:PORT")
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, rerr := os.ReadFile(path)
	if rerr != nil {
		t.Fatalf("%v (run go test ./internal/auth -update to create it)", rerr)
	}
	if got != string(want) {
		t.Errorf("%s differs (run go test ./internal/auth -update if the change is intended)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func names(rs *fakeRS, as *fakeAS) []string {
	r := []string{rs.srv.URL, "https://mcp.example"}
	if as != nil && as.srv != rs.srv {
		r = append(r, as.srv.URL, "https://auth.example")
	}
	return r
}

func TestTokenEndpoint500(t *testing.T) {
	as := newFakeAS(t)
	as.tokenStatus = 500
	as.tokenBody = "<html><body>\x1b[31mInternal error\x1b[0m: access_token=leaked-secret " + strings.Repeat("x", 2000) + "</body></html>"
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, nil)
	_, err := call(t, ctxT(t), c, rs.url())
	var e *Error
	if !errors.Is(err, ErrTokenEndpoint) || !errors.As(err, &e) {
		t.Fatalf("error %v", err)
	}
	if e.Status != 500 || len(e.Body) > maxBodyExcerpt+4 || strings.Contains(e.Body, "\x1b") || strings.Contains(e.Body, "leaked-secret") {
		t.Errorf("status %d, body excerpt (%d bytes) %q", e.Status, len(e.Body), e.Body)
	}
	if strings.Contains(err.Error(), "leaked-secret") {
		t.Error("the report shows a token from the body")
	}
	checkGolden(t, "token_endpoint_500", err, names(rs, as)...)
}

func TestResourceMismatch(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.prmResource = "https://evil.example.com/mcp"
	c := newTestClient(t, rs, nil)
	_, err := call(t, ctxT(t), c, rs.url())
	if !errors.Is(err, ErrResourceMismatch) {
		t.Fatalf("error %v, want ErrResourceMismatch", err)
	}
	authz, toks, regs, hits := as.snapshot()
	if len(authz)+len(toks)+len(regs)+len(hits) != 0 {
		t.Errorf("the client went on to the authorization server (%d %d %d %d)", len(authz), len(toks), len(regs), len(hits))
	}
	checkGolden(t, "resource_mismatch", err, names(rs, as)...)

	// Another port, scheme or a sibling path are mismatches too; a parent
	// path on the same origin is not.
	for res, ok := range map[string]bool{
		rs.srv.URL:       true,
		rs.srv.URL + "/": true,
		rs.url():         true,
		strings.ToUpper(rs.srv.URL[:4]) + rs.srv.URL[4:] + "/mcp": true,
		rs.srv.URL + "/mcp2":    false,
		rs.srv.URL + "/mcp/sub": false,
		strings.Replace(rs.srv.URL, "http:", "https:", 1) + "/mcp": false,
		"http://127.0.0.1:1/mcp":                                   false,
	} {
		if got := resourceCovers(res, rs.url()); got != ok {
			t.Errorf("resourceCovers(%q, %q) = %v, want %v", res, rs.url(), got, ok)
		}
	}
}

func TestNoS256(t *testing.T) {
	as := newFakeAS(t)
	as.noS256 = true
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, nil)
	_, err := call(t, ctxT(t), c, rs.url())
	if !errors.Is(err, ErrNoPKCE) {
		t.Fatalf("error %v, want ErrNoPKCE", err)
	}
	if authz, _, regs, _ := as.snapshot(); len(authz)+len(regs) != 0 {
		t.Error("the client registered or authorized without PKCE support")
	}
	checkGolden(t, "no_s256", err, names(rs, as)...)
}

func TestRegistrationRefused(t *testing.T) {
	as := newFakeAS(t)
	as.regStatus = 403
	as.regBody = `{"error":"invalid_client_metadata","error_description":"registration is by invitation only"}`
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, nil)
	_, err := call(t, ctxT(t), c, rs.url())
	var e *Error
	if !errors.Is(err, ErrRegistration) || !errors.As(err, &e) || e.OAuthError != "invalid_client_metadata" || e.Status != 403 {
		t.Fatalf("error %v", err)
	}
	checkGolden(t, "registration_refused", err, names(rs, as)...)
}

func TestNoClientIdentity(t *testing.T) {
	as := newFakeAS(t)
	as.noDCR = true
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, nil)
	_, err := call(t, ctxT(t), c, rs.url())
	if !errors.Is(err, ErrNoClientIdentity) {
		t.Fatalf("error %v", err)
	}
}

func TestStateMismatch(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, func(cfg *Config) {
		cfg.Opener = followOpener(t, func(u *url.URL) {
			q := u.Query()
			q.Set("state", "forged")
			u.RawQuery = q.Encode()
		})
	})
	_, err := call(t, ctxT(t), c, rs.url())
	if !errors.Is(err, ErrStateMismatch) {
		t.Fatalf("error %v, want ErrStateMismatch", err)
	}
	if _, toks, _, _ := as.snapshot(); len(toks) != 0 {
		t.Error("the code of a response with a forged state was exchanged")
	}
	checkGolden(t, "state_mismatch", err, names(rs, as)...)

	// No state at all is a mismatch as well.
	c2 := newTestClient(t, rs, func(cfg *Config) {
		cfg.Opener = followOpener(t, func(u *url.URL) {
			q := u.Query()
			q.Del("state")
			u.RawQuery = q.Encode()
		})
	})
	if _, err := call(t, ctxT(t), c2, rs.url()); !errors.Is(err, ErrStateMismatch) {
		t.Fatalf("no state: %v", err)
	}
}

func TestAuthorizationDenied(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, func(cfg *Config) {
		cfg.Opener = followOpener(t, func(u *url.URL) {
			q := u.Query()
			q.Del("code")
			q.Set("error", "access_denied")
			q.Set("error_description", "The user said no")
			u.RawQuery = q.Encode()
		})
	})
	_, err := call(t, ctxT(t), c, rs.url())
	var e *Error
	if !errors.Is(err, ErrAuthorizationDenied) || !errors.As(err, &e) || e.OAuthError != "access_denied" {
		t.Fatalf("error %v", err)
	}
}

func TestRedirectTimeout(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, func(cfg *Config) {
		cfg.RedirectTimeout = 200 * time.Millisecond
		cfg.Opener = func(context.Context, string) error { return nil } // nobody logs in
	})
	start := time.Now()
	_, err := call(t, ctxT(t), c, rs.url())
	if !errors.Is(err, ErrRedirectTimeout) {
		t.Fatalf("error %v, want ErrRedirectTimeout", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	checkGolden(t, "redirect_timeout", err, names(rs, as)...)

	// A caller's short deadline does not cut the login short, but an
	// explicit cancellation ends it at once.
	c2 := newTestClient(t, rs, func(cfg *Config) {
		cfg.RedirectTimeout = time.Minute
		cfg.Opener = func(context.Context, string) error { return nil }
	})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	if _, err := call(t, ctx, c2, rs.url()); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("cancellation took %v", time.Since(start))
	}
}

// TestIssuerMismatch: metadata whose issuer is not identical to the one
// the well-known URL was built from is not used, not even for
// registration (auth/metadata-issuer-mismatch); a trailing slash is a
// difference too.
func TestIssuerMismatch(t *testing.T) {
	for _, over := range []string{"https://attacker.example.com", "slash"} {
		t.Run(over, func(t *testing.T) {
			as := newFakeAS(t)
			as.prefix = "/mismatched-as"
			as.issuerOverride = over
			if over == "slash" {
				as.issuerOverride = as.issuer() + "/"
			}
			rs := newFakeRS(t, as)
			c := newTestClient(t, rs, nil)
			_, err := call(t, ctxT(t), c, rs.url())
			if !errors.Is(err, ErrIssuerMismatch) {
				t.Fatalf("error %v, want ErrIssuerMismatch", err)
			}
			if authz, toks, regs, _ := as.snapshot(); len(authz)+len(toks)+len(regs) != 0 {
				t.Errorf("the mismatched metadata's endpoints were used: %d authorize, %d token, %d register", len(authz), len(toks), len(regs))
			}
		})
	}
}

func TestInsecureAuthorizationServer(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.prm = "header"
	// The PRM names a plain-http authorization server that is not local.
	rs.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			writeJSON(w, 200, map[string]any{"resource": rs.url(), "authorization_servers": []string{"http://auth.example"}})
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+rs.srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
		w.WriteHeader(401)
	})
	c := newTestClient(t, rs, nil)
	_, err := call(t, ctxT(t), c, rs.url())
	if !errors.Is(err, ErrInsecureURL) {
		t.Fatalf("error %v, want ErrInsecureURL", err)
	}
}

func TestNoMetadataAnywhere(t *testing.T) {
	// A PRM whose authorization server publishes nothing, and no
	// configured endpoints: a discovery error naming the issuer.
	as := newFakeAS(t)
	as.metaLocation = "none"
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, nil)
	_, err := call(t, ctxT(t), c, rs.url())
	if !errors.Is(err, ErrDiscovery) {
		t.Fatalf("error %v, want ErrDiscovery", err)
	}
	// With configured endpoints it works.
	c2 := newTestClient(t, rs, func(cfg *Config) {
		cfg.AuthURL, cfg.TokenURL = as.issuer()+"/authorize", as.issuer()+"/token"
		cfg.ClientID = "pre"
	})
	mustCall(t, c2, rs.url())
}

func TestScopeChurnIsBounded(t *testing.T) {
	// A server that asks for a new scope on every 403 must not get
	// endless logins.
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	n := 0
	rs.required = func(string) []string {
		n++
		return []string{"s" + strings.Repeat("x", n)}
	}
	c := newTestClient(t, rs, nil)
	_, err := call(t, ctxT(t), c, rs.url())
	if !errors.Is(err, ErrInsufficientScope) {
		t.Fatalf("error %v", err)
	}
	if authz, _, _, _ := as.snapshot(); len(authz) > 2*defaultMaxAttempts {
		t.Errorf("%d logins", len(authz))
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("é", 600)
	if got := excerpt([]byte(long)); len(got) > maxBodyExcerpt+4 || !strings.HasSuffix(got, "…") {
		t.Errorf("excerpt of a long body: %d bytes", len(got))
	}
	for in, want := range map[string]string{
		`{"access_token":"abc","x":1}`:               `{"access_token":"***","x":1}`,
		`{"refresh_token" : "r\"q", "id_token":"i"}`: `{"refresh_token" : "***", "id_token":"***"}`,
		`error=x&code=secret&state=s`:                `error=x&code=***&state=s`,
		`client_secret=abc def`:                      `client_secret=*** def`,
	} {
		if got := excerpt([]byte(in)); got != want {
			t.Errorf("excerpt(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	if got := redactURL("https://a.example/cb?code=x&state=y#f"); got != "https://a.example/cb?…" {
		t.Errorf("got %q", got)
	}
}
