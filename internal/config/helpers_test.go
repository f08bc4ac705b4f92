package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/config -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (go test ./internal/config -update rewrites it):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

// env is a fixed environment for LookupEnv.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// write creates dir/name (and its directories) holding content.
func write(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadOne writes content to a temp dir as name and loads it as --config
// does, with the temp dir as working and home directory.
func loadOne(t *testing.T, name, content string, lookup func(string) (string, bool)) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, name, content)
	if lookup == nil {
		lookup = env()
	}
	return Load(Options{Files: []string{name}, Dir: dir, Home: dir, LookupEnv: lookup})
}

// mustLoad is loadOne for input that must load.
func mustLoad(t *testing.T, name, content string, lookup func(string) (string, bool)) *Config {
	t.Helper()
	cfg, err := loadOne(t, name, content, lookup)
	if err != nil {
		t.Fatalf("load %s:\n%v", name, err)
	}
	return cfg
}

// errText renders every report of err, as the CLI does.
func errText(err error) string {
	var parts []string
	for _, r := range Reports(err) {
		parts = append(parts, r.Error())
	}
	return strings.Join(parts, "\n\n") + "\n"
}

// truncate makes a (sparse) file of n bytes.
func truncate(p string, n int64) error { return os.Truncate(p, n) }

// trustFiles trusts the workspace config files paths, as `nexus trust`
// does, in home's trust store (the one Load uses when NEXUS_TRUST is unset).
func trustFiles(t testing.TB, home string, paths ...string) {
	t.Helper()
	store := TrustPath(env(), home)
	list, err := ReadTrust(store)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		key, err := TrustKey(p)
		if err != nil {
			t.Fatal(err)
		}
		_, sum, err := HashConfig(key)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, Trusted{Path: key, SHA256: sum})
	}
	if err := WriteTrust(store, list); err != nil {
		t.Fatal(err)
	}
}
