package httptransport

import (
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		ip      string
		blocked bool
		always  bool
	}{
		{"127.0.0.1", false, false},
		{"127.8.9.10", false, false},
		{"::1", false, false},
		{"::ffff:127.0.0.1", false, false},
		{"93.184.216.34", false, false},
		{"2606:2800:220:1::1", false, false},
		{"10.0.0.1", true, false},
		{"172.16.5.4", true, false},
		{"172.32.0.1", false, false},
		{"192.168.1.1", true, false},
		{"100.64.0.1", true, false},
		{"169.254.1.1", true, false},
		{"fe80::1", true, false},
		{"fe80::1%eth0", true, false},
		{"fc00::1", true, false},
		{"fd12:3456::1", true, false},
		{"0.0.0.0", true, true},
		{"::", true, true},
		{"224.0.0.1", true, true},
		{"ff02::1", true, true},
		{"255.255.255.255", true, false},
		{"0.1.2.3", true, false},
		{"::ffff:10.0.0.1", true, false},
		{"64:ff9b::a00:1", true, false}, // NAT64 of 10.0.0.1
		{"169.254.169.254", true, true},
		{"::ffff:169.254.169.254", true, true},
		{"fd00:ec2::254", true, true},
		{"100.100.100.200", true, true},
	}
	for _, tc := range cases {
		reason, always := classify(netip.MustParseAddr(tc.ip))
		if (reason != "") != tc.blocked || always != tc.always {
			t.Errorf("%s: reason %q always %v, want blocked %v always %v", tc.ip, reason, always, tc.blocked, tc.always)
		}
	}
}

// The guard's tests never send a packet off loopback: the resolver is
// fake and the dial recorder refuses anything else, so a broken guard
// shows up as a recorded address, not as traffic.

func TestBlockedHostname(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("http://internal.example:8080/mcp")
	cfg.Resolver = &fakeResolver{answers: map[string][][]string{"internal.example": {{"10.0.0.1"}}}}
	c := e.dialConn(cfg)
	_, err := mcp.Connect(testCtx(t), c, mcp.ClientOptions{})
	b := wantErrAs[*BlockedAddressError](t, err)
	if b.Host != "internal.example" || b.IP.String() != "10.0.0.1" || b.Always {
		t.Errorf("%+v", b)
	}
	wantContains(t, b.Error(), `server "test"`, "http://internal.example:8080/mcp", "10.0.0.1", "private network", "allow_private_networks")
	if seen := e.dial.seen(); len(seen) != 0 {
		t.Fatalf("the guard let dials through: %v", seen)
	}
}

func TestAllowPrivateNetworks(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("http://internal.example:8080/mcp")
	cfg.AllowPrivateNetworks = true
	cfg.MaxRetries = new(0)
	cfg.Resolver = &fakeResolver{answers: map[string][][]string{"internal.example": {{"10.0.0.1"}}}}
	c := e.dialConn(cfg)
	_, err := mcp.Connect(testCtx(t), c, mcp.ClientOptions{})
	if err == nil || !strings.Contains(err.Error(), errOffLoopback.Error()) {
		t.Fatalf("want the recorder's refusal, got %v", err)
	}
	// The checked IP is dialed, not the name.
	if seen := e.dial.seen(); !slices.Equal(seen, []string{"10.0.0.1:8080"}) {
		t.Errorf("dialed %v", seen)
	}
}

func TestMetadataAlwaysBlocked(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("http://169.254.169.254/latest/meta-data")
	cfg.AllowPrivateNetworks = true
	c := e.dialConn(cfg)
	_, err := mcp.Connect(testCtx(t), c, mcp.ClientOptions{})
	b := wantErrAs[*BlockedAddressError](t, err)
	if !b.Always {
		t.Errorf("%+v", b)
	}
	wantContains(t, b.Error(), "cloud metadata", "never allowed")
	if seen := e.dial.seen(); len(seen) != 0 {
		t.Fatalf("dialed %v", seen)
	}
}

// TestDNSRebinding: the name resolves to loopback first and to a private
// address later; the later connection is refused at dial time.
func TestDNSRebinding(t *testing.T) {
	e := newEnv(t)
	_, url := e.testServer(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close") // every request needs a new dial
			next.ServeHTTP(w, r)
		})
	})
	port := url[strings.LastIndexByte(url, ':')+1:]
	cfg := e.config("http://rebind.example:" + port)
	cfg.Resolver = &fakeResolver{answers: map[string][][]string{"rebind.example": {{"127.0.0.1"}, {"10.0.0.1"}}}}
	c := e.dialConn(cfg)
	_, err := mcp.Connect(testCtx(t), c, mcp.ClientOptions{})
	b := wantErrAs[*BlockedAddressError](t, err)
	if b.IP.String() != "10.0.0.1" {
		t.Errorf("%+v", b)
	}
	for _, a := range e.dial.seen() {
		if !strings.HasPrefix(a, "127.0.0.1:") {
			t.Errorf("dialed %s", a)
		}
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	e := newEnv(t)
	url := e.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam?token=abc", http.StatusTemporaryRedirect)
	}))
	c := e.dialConn(e.config(url + "/mcp"))
	_, err := mcp.Connect(testCtx(t), c, mcp.ClientOptions{})
	re := wantErrAs[*RedirectError](t, err)
	if re.Status != http.StatusTemporaryRedirect {
		t.Errorf("%+v", re)
	}
	wantContains(t, re.Error(), `server "test"`, url+"/mcp", "http://169.254.169.254/latest/meta-data/iam", "never followed")
	if strings.Contains(re.Error(), "abc") {
		t.Errorf("the Location's token leaked: %s", re.Error())
	}
	for _, a := range e.dial.seen() {
		if strings.HasPrefix(a, "169.254.") {
			t.Fatalf("followed the redirect: %v", e.dial.seen())
		}
	}
}

func TestRedactURL(t *testing.T) {
	u, _ := url.Parse("https://user:pw@example.com/mcp?api_key=k1&x=1&token=t1")
	got := redactURL(u)
	for _, secret := range []string{"pw", "k1", "t1"} {
		if strings.Contains(got, secret) {
			t.Errorf("%s leaks %q", got, secret)
		}
	}
	wantContains(t, got, "user", "example.com/mcp", "x=1")
}
