//go:build !wasip1

package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter"
	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
)

// The filter's own code imports only sdk/filter and sdk/event. Its tests
// are the host's harness around it: they build the real .wasm and run it
// in the real runtime, beside the same code run natively.

func TestNative(t *testing.T) {
	for _, s := range filtertest.LoadCases(t, "testdata/cases.json") {
		if err := filter.Configure(s.Config); err != nil {
			t.Fatal(err)
		}
		for _, c := range s.Cases {
			c.Check(t, filtertest.DecodeDecision(t, filter.Call(c.Event)))
		}
	}
}

func TestWASM(t *testing.T) {
	filtertest.RunWASM(t, "tool-allowlist", filtertest.Build(t, "."), "testdata/cases.json")
}

func TestBadConfig(t *testing.T) {
	mod := filtertest.Build(t, ".")
	for cfg, want := range map[string]string{
		`{}`:                    "allow must list at least one",
		`{"allow": ["github"]}`: `"github" has no dot`,
		`{"allow": ["a.["]}`:    "bad glob",
		`{"alow": ["a.b"]}`:     `unknown field "alow"`,
	} {
		_, err := filtertest.Load(t, mod, filtertest.Spec{Config: json.RawMessage(cfg)})
		if err == nil || !contains(err.Error(), want) {
			t.Errorf("config %s: %v, want %q", cfg, err, want)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

var benchEvent = []byte(`{"abi":1,"phase":"request","method":"tools/call","agent":{"id":"cli","permission":"trusted"},"server":{"name":"github"},"tool":{"name":"list_issues"},"params":{"name":"list_issues","arguments":{"repo":"nexus-mcp/nexus","state":"open"}}}`)

const benchConfig = `{"allow": ["testserver.*", "github.get_*", "github.list_*", "github.search_*"]}`

// BenchmarkToolAllowlist is one policy call of the filter built with the
// Go SDK, against the same code in native Go and out of process.
func BenchmarkToolAllowlist(b *testing.B) {
	f, err := filtertest.Load(b, filtertest.Build(b, "."), filtertest.Spec{Config: json.RawMessage(benchConfig)})
	if err != nil {
		b.Fatal(err)
	}
	var e event.Event
	if err := json.Unmarshal(benchEvent, &e); err != nil {
		b.Fatal(err)
	}
	if err := filter.Configure([]byte(benchConfig)); err != nil {
		b.Fatal(err)
	}
	pipe := filtertest.StartPipe(b, filtertest.BuildNative(b, "."), []byte(benchConfig))
	ctx := context.Background()
	filtertest.Compare(b, func() error {
		d, err := f.Handle(ctx, &e)
		if err == nil && d.Action != event.Allow {
			b.Fatalf("decision %+v", d)
		}
		return err
	}, filtertest.Baselines{
		Native: func() { filter.CallEvent(&e) },
		OOP: func() error {
			_, err := pipe.CallEvent(&e)
			return err
		},
	})
}
