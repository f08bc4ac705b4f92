package httptransport

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/testserver"
)

func TestTLS(t *testing.T) {
	e := newEnv(t)
	h := testserver.NewHTTPHandler(testserver.Options{})
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	t.Cleanup(func() { h.Close(); srv.CloseClientConnections(); srv.Close() })
	url := srv.URL + "/mcp"

	// Verification is on: a self-signed server is refused, and that ends
	// the session attempt with the x509 reason.
	c := e.dialConn(e.config(url))
	_, err := mcp.Connect(testCtx(t), c, mcp.ClientOptions{})
	var ua x509.UnknownAuthorityError
	var cv interface{ Unwrap() error }
	if !errors.As(err, &ua) && !errors.As(err, &cv) {
		t.Fatalf("want a certificate error, got %v", err)
	}
	wantContains(t, err.Error(), `server "test"`, "certificate")

	// With the server's CA in the bundle it works.
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(bundle, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := e.config(url)
	cfg.CABundle = bundle
	cl, _ := e.connect(cfg, mcp.ClientOptions{})
	if got := call(t, cl, "add", map[string]any{"a": 1, "b": 1}); got != "2" {
		t.Errorf("add = %q", got)
	}

	// A bundle that is not there, or holds no certificate, is a config error.
	for _, path := range []string{filepath.Join(t.TempDir(), "missing.pem"), os.DevNull} {
		cfg.CABundle = path
		_, err := Dial(testCtx(t), cfg)
		wantErrAs[*ConfigError](t, err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Server: "s"},
		{Server: "s", URL: "ftp://example.com/"},
		{Server: "s", URL: "http:///nohost"},
		{Server: "s", URL: "http://example.com/", Options: Options{Headers: map[string]string{"Bad Name": "x"}}},
		{Server: "s", URL: "http://example.com/", Options: Options{Headers: map[string]string{"X-Token": "s3cret\r\nInjected: 1"}}},
	} {
		_, err := Dial(testCtx(t), cfg)
		ce := wantErrAs[*ConfigError](t, err)
		wantContains(t, ce.Error(), `server "s"`)
		if strings.Contains(ce.Error(), "s3cret") {
			t.Errorf("error repeats a header value: %s", ce.Error())
		}
	}
}
