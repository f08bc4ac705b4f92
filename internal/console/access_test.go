package console_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/console"
)

// noRedirect is a client that shows redirects rather than following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func post(t *testing.T, u string, form url.Values, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func get(t *testing.T, u, cookie string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The access rules at the HTTP level: pages need a login; a login and
// every change need the console's own Origin; a change needs the login's
// CSRF token and a role that may make it; the cookie's flags.
func TestAccess(t *testing.T) {
	_, _, base := fakeConsole(t, &fakeServers{list: servers(2)}, &fakeSessions{list: sessions(2)})
	origin := map[string]string{"Origin": base}

	if resp, _ := get(t, base+"/", ""); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Errorf("no login: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := get(t, base+"/decisions/stream", ""); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the stream without a login: %d", resp.StatusCode)
	}
	if resp, _ := post(t, base+"/login", url.Values{"token": {adminToken}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a login without Origin: %d", resp.StatusCode)
	}
	if resp, _ := post(t, base+"/login", url.Values{"token": {adminToken}}, map[string]string{"Origin": "http://evil.example"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a login from another origin: %d", resp.StatusCode)
	}
	resp, body := post(t, base+"/login", url.Values{"token": {"wrong-token-0123456789"}}, origin)
	if resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, adminToken) {
		t.Errorf("a wrong token: %d", resp.StatusCode)
	}

	login := func(token string) (cookie, csrf string) {
		resp, _ := post(t, base+"/login", url.Values{"token": {token}}, origin)
		sc := resp.Header.Get("Set-Cookie")
		if resp.StatusCode != http.StatusSeeOther || !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") {
			t.Fatalf("login: %d %q", resp.StatusCode, sc)
		}
		// The test server is on loopback over plain HTTP: the one place
		// Secure is relaxed.
		if strings.Contains(sc, "Secure") {
			t.Errorf("Secure on a plain-HTTP loopback console: the browser would not send it back")
		}
		cookie, _, _ = strings.Cut(sc, ";")
		_, page := get(t, base+"/sessions", cookie)
		m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no CSRF token on the page:\n%s", page)
		}
		for _, secret := range []string{adminToken, viewerToken} {
			if strings.Contains(page, secret) {
				t.Errorf("a page shows a token")
			}
		}
		return cookie, m[1]
	}
	admin, adminCSRF := login(adminToken)
	viewer, viewerCSRF := login(viewerToken)
	end := url.Values{"id": {"0000000000000000"}, "reason": {"test"}}
	with := func(csrf string) url.Values {
		v := url.Values{}
		for k, x := range end {
			v[k] = x
		}
		v.Set("csrf", csrf)
		return v
	}
	for _, c := range []struct {
		name   string
		form   url.Values
		hdr    map[string]string
		status int
	}{
		{"no Origin", with(adminCSRF), map[string]string{"Cookie": admin}, http.StatusForbidden},
		{"another Origin", with(adminCSRF), map[string]string{"Cookie": admin, "Origin": "http://127.0.0.1:1"}, http.StatusForbidden},
		{"cross-site fetch metadata", with(adminCSRF), map[string]string{"Cookie": admin, "Origin": base, "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"no CSRF token", end, map[string]string{"Cookie": admin, "Origin": base}, http.StatusForbidden},
		{"another login's CSRF token", with(viewerCSRF), map[string]string{"Cookie": admin, "Origin": base}, http.StatusForbidden},
		{"read-only", with(viewerCSRF), map[string]string{"Cookie": viewer, "Origin": base}, http.StatusForbidden},
		{"no login", with(adminCSRF), map[string]string{"Origin": base}, http.StatusUnauthorized},
		{"admin", with(adminCSRF), map[string]string{"Cookie": admin, "Origin": base}, http.StatusSeeOther},
	} {
		if resp, body := post(t, base+"/sessions/end", c.form, c.hdr); resp.StatusCode != c.status {
			t.Errorf("%s: %d, want %d: %s", c.name, resp.StatusCode, c.status, body)
		}
	}
	// A DNS-rebound name is refused on a loopback console.
	req, _ := http.NewRequest(http.MethodGet, base+"/login", nil)
	req.Host = "attacker.example"
	if resp, err := noRedirect.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a foreign Host: %v %v", err, resp)
	}
	// Logging out ends the login.
	if resp, _ := post(t, base+"/logout", url.Values{"csrf": {adminCSRF}}, map[string]string{"Cookie": admin, "Origin": base}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("logout: %d", resp.StatusCode)
	}
	if resp, _ := get(t, base+"/", admin); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("after logout: %d", resp.StatusCode)
	}
}

// A console that is not on loopback sets Secure, and needs TLS to listen.
func TestNotLoopback(t *testing.T) {
	if console.Loopback("0.0.0.0:8760") || console.Loopback("192.0.2.1:1") || !console.Loopback("127.0.0.1:0") || !console.Loopback("[::1]:80") || !console.Loopback("localhost:1") {
		t.Error("Loopback")
	}
	k, err := console.New(console.Config{Options: console.Options{Listen: "0.0.0.0:0", Tokens: []string{adminToken}}, Servers: &fakeServers{}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, err := k.Listen(); err == nil || !strings.Contains(err.Error(), "tls_cert") {
		t.Errorf("listening on every address over plain HTTP: %v", err)
	}
	if _, err := console.New(console.Config{Servers: &fakeServers{}}); err == nil || !strings.Contains(err.Error(), "tokens") {
		t.Errorf("no tokens: %v", err)
	}
}
