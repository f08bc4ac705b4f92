package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchLayers writes three layers holding 200 server definitions: 100 in
// the global mcp.json, 50 in an ancestor's nexus.hcl, 50 in the local
// nexus.hcl (25 of them overriding global ones). It returns the options
// that discover them and the same servers as one plain JSON file.
func benchLayers(b *testing.B) (Options, string) {
	root := b.TempDir()
	home := filepath.Join(root, "home")
	proj := filepath.Join(root, "work", "proj")
	var js strings.Builder
	js.WriteString(`{"mcpServers": {`)
	for i := range 100 {
		if i > 0 {
			js.WriteString(",")
		}
		fmt.Fprintf(&js, "\n  \"g%d\": {\"command\": \"npx\", \"args\": [\"-y\", \"@scope/server-%d\", \"--port\", \"%d\"], \"env\": {\"TOKEN\": \"${TOKEN_%d:-none}\", \"MODE\": \"prod\"}}", i, i, 8000+i, i)
	}
	js.WriteString("\n}}\n")
	write(b, home, ".nexus/mcp.json", js.String())
	hcl := func(prefix string, from, n int) string {
		var h strings.Builder
		h.WriteString("variable \"region\" { default = \"eu\" }\nlocals {\n  base = \"https://${var.region}.example.com\"\n}\n")
		for i := from; i < from+n; i++ {
			if i%2 == 0 {
				fmt.Fprintf(&h, "server \"%s%d\" {\n  timeout = \"30s\"\n  stdio {\n    command = \"node\"\n    args    = [\"server-%d.js\", upper(var.region)]\n    env     = { HOME_DIR = env(\"HOME\", \"/\") }\n  }\n}\n", prefix, i, i)
			} else {
				fmt.Fprintf(&h, "server \"%s%d\" {\n  http {\n    url     = \"${local.base}/mcp/%d\"\n    headers = { X-Id = \"%d\" }\n  }\n}\n", prefix, i, i, i)
			}
		}
		return h.String()
	}
	write(b, root, "work/.nexus/nexus.hcl", hcl("a", 0, 50))
	write(b, proj, "nexus.hcl", hcl("g", 0, 25)+strings.SplitN(hcl("l", 25, 25), "}\n}\n", 2)[1])
	trustFiles(b, home, filepath.Join(root, "work/.nexus/nexus.hcl"), filepath.Join(proj, "nexus.hcl"))
	opts := Options{Dir: proj, Home: home, LookupEnv: env("HOME", "/home/u")}
	cfg, err := Load(opts)
	if err != nil {
		b.Fatal(err)
	}
	if len(cfg.Files) != 3 {
		b.Fatalf("files %v", cfg.Files)
	}
	plain, _, err := Compile(cfg, FormatNexusJSON)
	if err != nil {
		b.Fatal(err)
	}
	return opts, write(b, root, "plain.json", string(plain))
}

// BenchmarkLoadThreeLayers discovers, loads and merges three layers of 200
// server definitions (target: under 20 ms). For scale, each iteration
// also reads the merged result as one JSON file with encoding/json into
// map[string]any, interleaved in the same run; x-json-baseline is the ratio.
func BenchmarkLoadThreeLayers(b *testing.B) {
	opts, plain := benchLayers(b)
	var load, base time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := Load(opts); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		data, err := os.ReadFile(plain)
		if err != nil {
			b.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		load += t1.Sub(t0)
		base += t2.Sub(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(load.Microseconds())/n/1000, "load-ms/op")
	b.ReportMetric(float64(base.Microseconds())/n/1000, "json-baseline-ms/op")
	b.ReportMetric(float64(load)/float64(base), "x-json-baseline")
}
