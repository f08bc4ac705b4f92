package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestDialGuard checks the connect-time address decision directly: no
// packet is sent to any address, so a broken guard cannot reach one.
func TestDialGuard(t *testing.T) {
	cases := []struct {
		addr        string
		allowed     bool
		allowedPriv bool
	}{
		{"127.0.0.1:443", true, true},
		{"[::1]:443", true, true},
		{"93.184.216.34:443", true, true},
		{"169.254.169.254:80", false, false},
		{"[fd00:ec2::254]:80", false, false},
		{"169.254.10.1:80", false, true},
		{"[fe80::1]:80", false, true},
		{"10.0.0.1:443", false, true},
		{"192.168.1.1:443", false, true},
		{"172.16.0.1:443", false, true},
		{"[fc00::1]:443", false, true},
		{"100.64.0.1:443", false, true},
		{"0.0.0.0:443", false, false},
		{"224.0.0.1:443", false, false},
		{"[::ffff:169.254.169.254]:80", false, false},
		{"[::ffff:10.0.0.1]:80", false, true},
	}
	for _, tc := range cases {
		if err := checkDialAddr(tc.addr, false); (err == nil) != tc.allowed {
			t.Errorf("checkDialAddr(%s, private=false) = %v, want allowed=%v", tc.addr, err, tc.allowed)
		}
		if err := checkDialAddr(tc.addr, true); (err == nil) != tc.allowedPriv {
			t.Errorf("checkDialAddr(%s, private=true) = %v, want allowed=%v", tc.addr, err, tc.allowedPriv)
		}
	}
	// Proxies from the environment are ignored: through one, the guard
	// would see only the proxy's address.
	if tr := NewHTTPClient(false).Transport.(*http.Transport); tr.Proxy != nil {
		t.Error("the OAuth client takes a proxy from the environment")
	}
	// NAT64 of a private address is that private address.
	if err := checkDialAddr("[64:ff9b::a00:1]:443", false); err == nil {
		t.Error("NAT64 of 10.0.0.1 passed the guard")
	}
	if err := checkDialAddr("example.com:443", true); err == nil {
		t.Error("an unresolved name passed the guard")
	}
}

// TestRedirectGuard: same-origin redirects are followed (up to 3), a
// redirect to another origin is refused with its Location named. The
// "other origin" is another loopback port, so nothing leaves the machine.
func TestRedirectGuard(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the client followed a redirect to another origin")
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/ok":
			w.Write([]byte("{}"))
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/away":
			http.Redirect(w, r, other.URL+"/steal?code=secret", http.StatusFound)
		}
	}))
	defer srv.Close()
	hc := NewHTTPClient(false)
	resp, err := hc.Get(srv.URL + "/same")
	if err != nil {
		t.Fatalf("same-origin redirect: %v", err)
	}
	resp.Body.Close()
	if _, err := hc.Get(srv.URL + "/loop"); err == nil || !strings.Contains(err.Error(), "3 redirects") {
		t.Errorf("redirect loop: %v", err)
	}
	_, err = hc.Get(srv.URL + "/away")
	if err == nil || !strings.Contains(err.Error(), "another origin") || !strings.Contains(err.Error(), other.URL+"/steal") {
		t.Errorf("cross-origin redirect: %v", err)
	}
	var ue *url.Error
	if errors.As(err, &ue) && strings.Contains(ue.Err.Error(), "secret") {
		t.Error("the guard's error shows the redirect's query")
	}
	if e := (&Error{Kind: ErrDiscovery, Err: err}); strings.Contains(e.Error(), "secret") {
		t.Error("an auth error shows the redirect's query")
	}
}

func TestBodyCap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"x":"`))
		chunk := []byte(strings.Repeat("a", 64<<10))
		for i := 0; i < 40; i++ { // 2.5 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c := &Client{hc: NewHTTPClient(false)}
	var v map[string]any
	err := c.getJSON(t.Context(), srv.URL, &v)
	if err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("oversized metadata: %v", err)
	}
}

func TestHTMLInsteadOfJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html>login page</html>"))
	}))
	defer srv.Close()
	c := &Client{hc: NewHTTPClient(false)}
	var v map[string]any
	if err := c.getJSON(t.Context(), srv.URL, &v); err == nil || !strings.Contains(err.Error(), "text/html") {
		t.Errorf("HTML metadata: %v", err)
	}
}

func TestURLHelpers(t *testing.T) {
	for in, want := range map[string]string{
		"HTTPS://MCP.Example.com:443/mcp":  "https://mcp.example.com/mcp",
		"https://mcp.example.com/":         "https://mcp.example.com",
		"https://mcp.example.com/mcp#frag": "https://mcp.example.com/mcp",
		"http://[::1]:8080/mcp":            "http://[::1]:8080/mcp",
		"https://mcp.example.com:8443":     "https://mcp.example.com:8443",
	} {
		got, err := canonicalResource(in)
		if err != nil || got != want {
			t.Errorf("canonicalResource(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"mcp.example.com", "ftp://x/y", "https://user:pw@x/y", ""} {
		if _, err := canonicalResource(bad); err == nil {
			t.Errorf("canonicalResource(%q) accepted", bad)
		}
	}
	if got := prmURLs("https://example.com/public/mcp"); strings.Join(got, " ") !=
		"https://example.com/.well-known/oauth-protected-resource/public/mcp https://example.com/.well-known/oauth-protected-resource" {
		t.Errorf("prmURLs: %v", got)
	}
	if got := prmURLs("https://example.com"); len(got) != 1 {
		t.Errorf("prmURLs at root: %v", got)
	}
	if got := MetadataURLs("https://auth.example.com/tenant1"); strings.Join(got, " ") !=
		"https://auth.example.com/.well-known/oauth-authorization-server/tenant1 https://auth.example.com/.well-known/openid-configuration/tenant1 https://auth.example.com/tenant1/.well-known/openid-configuration" {
		t.Errorf("asMetadataURLs: %v", got)
	}
	if got := MetadataURLs("https://auth.example.com/"); strings.Join(got, " ") !=
		"https://auth.example.com/.well-known/oauth-authorization-server https://auth.example.com/.well-known/openid-configuration" {
		t.Errorf("asMetadataURLs root: %v", got)
	}
	for u, ok := range map[string]bool{
		"https://a.example/x": true, "http://localhost:1/x": true, "http://127.0.0.5/x": true, "http://[::1]/x": true,
		"http://a.example/x": false, "javascript:alert(1)": false, "file:///etc/passwd": false, "http://localhost.evil.com/": false,
	} {
		if got := checkSecureURL(u) == nil; got != ok {
			t.Errorf("checkSecureURL(%q) ok=%v, want %v", u, got, ok)
		}
	}
}
