package console_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// TestOIDCServe logs in to the console of a real `nexus serve` through
// single sign-on as nexus.hcl sets it up: the gateway block's oauth
// issuer (a local OpenID Connect provider on loopback), the console
// block's client, secret (a sensitive variable) and role mapping. An
// admin logs in and sees the overview with the configured server; a
// person whose ID token carries no console role is refused, and the
// log shows neither the client secret nor an ID token.
func TestOIDCServe(t *testing.T) {
	bin := testenv.Nexus(t)
	is := newIssuer(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`
variable "oidc_secret" {
  sensitive = true
  default   = %q
}
server "testserver" {
  stdio {
    command = %q
    args    = ["testserver"]
  }
}
agent "claude" {
  permission = "yolo"
}
gateway {
  public_url = "http://127.0.0.1:1/mcp"
  oauth {
    issuer      = %q
    agent_claim = "sub"
    agents      = { "*" = "claude" }
  }
}
console {
  oidc_client_id     = %q
  oidc_client_secret = var.oidc_secret
  role_claim         = %q
  admin_roles        = ["console-admin"]
  readonly_roles     = ["console-viewer"]
}
`, is.secret, bin, is.URL, is.client, roleClaim)
	path := filepath.Join(dir, "nexus.hcl")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, bin, path, &served{stderr: &testenv.Buffer{}})
	browser := newBrowser(t)
	shots := artifacts(t)

	t.Run("admin", func(t *testing.T) {
		is.as("alice")
		p := person(t, browser)
		do(t, p, "single sign-on", navigate(s.console+"/login"), chromedp.WaitVisible(chromedp.CSS("a.sso")),
			chromedp.Click(chromedp.CSS("a.sso")), chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Console"]`)))
		if who := eval[string](t, p, `document.querySelector(".logout span").textContent`); who != "oidc alice@example.com (admin)" {
			t.Errorf("logged in as %q", who)
		}
		if path := eval[string](t, p, `location.pathname`); path != "/" {
			t.Errorf("after the login the browser is at %q, not the overview", path)
		}
		servers := eval[string](t, p, `document.querySelector("section.replica table.servers tbody").innerText`)
		if !strings.Contains(servers, "testserver") {
			t.Errorf("the overview's servers: %q", servers)
		}
		shot(t, p, shots, "serve-sso-overview")
	})

	t.Run("no role", func(t *testing.T) {
		is.as("carol")
		p := person(t, browser)
		do(t, p, "single sign-on", navigate(s.console+"/login"), chromedp.WaitVisible(chromedp.CSS("a.sso")),
			chromedp.Click(chromedp.CSS("a.sso")), chromedp.WaitVisible(chromedp.CSS(".error")))
		if text := eval[string](t, p, `document.querySelector(".error").textContent`); !strings.Contains(text, "no console role") {
			t.Errorf("a person without a role: %q", text)
		}
		if n := eval[int](t, p, `document.querySelectorAll("nav").length`); n != 0 {
			t.Error("a person without a role was logged in")
		}
		// Nor can the page be reached without the login.
		do(t, p, "the overview", navigate(s.console+"/"), chromedp.WaitVisible(chromedp.CSS("main")))
		if path := eval[string](t, p, `location.pathname`); path != "/login" {
			t.Errorf("without a role the overview answered at %q", path)
		}
	})

	if strings.Contains(s.stderr.String(), is.secret) {
		t.Error("nexus serve's log shows the console's client secret")
	}
}
