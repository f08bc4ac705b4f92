package main

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// The modules a security review looks for first in the SBOM.
var wantModules = []string{"github.com/tetratelabs/wazero", "github.com/hashicorp/go-plugin", "github.com/hashicorp/hcl/v2"}

// Bounds on what the archive may hold, so a broken build cannot fill
// the disk or hang the check.
const (
	maxFile  = 512 << 20
	maxFiles = 256
	runFor   = 2 * time.Minute
)

func main() {
	dist := flag.String("dist", "bin/dist", "goreleaser's dist directory")
	config := flag.String("config", "nexus.hcl", "the config `make run` uses")
	flag.Parse()
	if err := check(*dist, *config, runtime.GOOS, runtime.GOARCH); err != nil {
		fmt.Fprintln(os.Stderr, "releasecheck:", err)
		os.Exit(1)
	}
}

func check(dist, config, goos, goarch string) error {
	archives, _ := filepath.Glob(filepath.Join(dist, fmt.Sprintf("nexus_*_%s_%s.tar.gz", goos, goarch)))
	if len(archives) != 1 {
		return fmt.Errorf("want one nexus_*_%s_%s.tar.gz in %s, found %d; run the snapshot first (make release-check)", goos, goarch, dist, len(archives))
	}
	archive := archives[0]
	version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(archive), "nexus_"), fmt.Sprintf("_%s_%s.tar.gz", goos, goarch))
	if err := checksum(dist, archive); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "releasecheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	files, err := untar(archive, dir)
	if err != nil {
		return fmt.Errorf("%s: %w", archive, err)
	}
	for _, want := range []string{"nexus", "plugins/transport-websocket", "plugins/transport-ssh", "plugins/policy-ratelimit",
		"filters/tool-allowlist.wasm", "filters/redact-secrets.wasm", "filters/rego-guard.tar.gz", "LICENSE", "SECURITY.md", "README.md", "CHANGELOG.md"} {
		if !files[want] {
			return fmt.Errorf("%s lacks %s (it holds %d files); check the archives section of .goreleaser.yaml", archive, want, len(files))
		}
	}
	fmt.Printf("releasecheck: %s holds nexus, the plugins, the filters and the license files; its checksum matches\n", filepath.Base(archive))

	nexus := filepath.Join(dir, "nexus")
	out, err := run(dir, nexus, "version")
	if err != nil || !strings.Contains(out, "nexus "+version+" ") {
		return fmt.Errorf("`nexus version` of the snapshot printed %q (%v); want version %s (the ldflags of .goreleaser.yaml stamp host.Version)", out, err, version)
	}
	cfg, err := filepath.Abs(config)
	if err != nil {
		return err
	}
	out, err = run(dir, nexus, "--config", cfg, "call", "--yes", "testserver.echo", "message=hello from the release")
	if err != nil || !strings.Contains(out, "hello from the release") {
		return fmt.Errorf("the snapshot's `nexus call testserver.echo` printed %q (%v)", out, err)
	}
	fmt.Printf("releasecheck: the snapshot's nexus says %s and answers make run's call\n", version)

	return sbom(dist, nexus, version, goos, goarch)
}

// checksum checks the archive's line in checksums.txt.
func checksum(dist, archive string) error {
	f, err := os.Open(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		return fmt.Errorf("no checksums.txt: %w", err)
	}
	defer f.Close()
	a, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer a.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(a, maxFile)); err != nil {
		return err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[1] == filepath.Base(archive) {
			if fields[0] != sum {
				return fmt.Errorf("checksums.txt says %s for %s; it hashes to %s", fields[0], fields[1], sum)
			}
			return nil
		}
	}
	return fmt.Errorf("checksums.txt has no line for %s", filepath.Base(archive))
}

// untar unpacks a .tar.gz into dir and returns the names of its regular
// files, refusing paths that leave dir.
func untar(path, dir string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	files := map[string]bool{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		name := filepath.Clean(h.Name)
		if !filepath.IsLocal(name) {
			return nil, fmt.Errorf("entry %q leaves the archive's directory", h.Name)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if len(files) >= maxFiles || h.Size > maxFile {
			return nil, fmt.Errorf("entry %q: over the bounds of %d files of %d bytes", h.Name, maxFiles, maxFile)
		}
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755|0o600)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(out, io.LimitReader(tr, maxFile))
		out.Close()
		if err != nil {
			return nil, err
		}
		files[filepath.ToSlash(name)] = true
	}
}

// run runs the snapshot's nexus with only its own directory on PATH
// first, so the config's `nexus testserver` is the snapshot too.
func run(dir, bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), runFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	home, err := os.MkdirTemp("", "releasecheck-home-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	cmd.Env = []string{"PATH=" + dir + string(os.PathListSeparator) + "/usr/bin:/bin", "HOME=" + home}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sbom checks that the CycloneDX document lists the modules a review
// looks for, each at the version linked into the binary.
func sbom(dist, nexus, version, goos, goarch string) error {
	path := filepath.Join(dist, fmt.Sprintf("nexus_%s_%s_%s.cdx.json", version, goos, goarch))
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("no SBOM: %w (the sboms section of .goreleaser.yaml runs cyclonedx-gomod)", err)
	}
	var doc struct {
		BOMFormat  string `json:"bomFormat"`
		Components []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			PURL    string `json:"purl"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.BOMFormat != "CycloneDX" {
		return fmt.Errorf("%s is not a CycloneDX JSON document (%v)", path, err)
	}
	bi, err := buildinfo.ReadFile(nexus)
	if err != nil {
		return fmt.Errorf("reading the module list linked into %s: %w", nexus, err)
	}
	linked := map[string]string{}
	for _, d := range bi.Deps {
		linked[d.Path] = d.Version
	}
	listed := map[string]string{}
	for _, c := range doc.Components {
		if p, ok := strings.CutPrefix(c.PURL, "pkg:golang/"); ok {
			p, _, _ = strings.Cut(p, "@")
			listed[p] = c.Version
		}
	}
	for _, m := range wantModules {
		if linked[m] == "" {
			return fmt.Errorf("the snapshot's nexus does not link %s", m)
		}
		if listed[m] != linked[m] {
			return fmt.Errorf("the SBOM lists %s at %q; the binary links %s", m, listed[m], linked[m])
		}
		fmt.Printf("releasecheck: the SBOM lists %s %s\n", m, listed[m])
	}
	return nil
}
