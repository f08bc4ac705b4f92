package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/lock"
)

// hclBlock is one ```hcl block of a markdown file.
type hclBlock struct {
	file string
	line int    // of the opening fence
	info string // the fence's words after "hcl"
	text string
}

var fence = regexp.MustCompile("^(\\s*)```hcl\\b(.*)$")

// markdownHCL returns every ```hcl block of the markdown files git knows
// in the repository (the READMEs of the project, its filters, plugins and
// examples, and any doc).
func markdownHCL(t *testing.T, root string) []hclBlock {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "*.md").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var blocks []hclBlock
	for _, f := range strings.Fields(string(out)) {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for i := 0; i < len(lines); i++ {
			m := fence.FindStringSubmatch(lines[i])
			if m == nil {
				continue
			}
			b := hclBlock{file: f, line: i + 1, info: strings.TrimSpace(m[2])}
			var body []string
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				body = append(body, strings.TrimPrefix(lines[i], m[1]))
			}
			b.text = strings.Join(body, "\n") + "\n"
			blocks = append(blocks, b)
		}
	}
	return blocks
}

// placeholder is a sha256 the reader puts in: "…" or "<output of
// sha256sum>" in the docs.
var placeholder = regexp.MustCompile(`(sha256\s*=\s*)"(…|<[^">]*>)"`)

// TestMarkdownHCL loads every HCL block in the repository's markdown, as a
// reader would paste it into nexus.hcl (issue 42): each must be whole (it
// defines what it names) and load without an error. A block fenced as
// ```hcl lockfile is a nexus.lock.hcl, read by the lockfile's parser. A
// sha256 placeholder stands for the reader's own hash; unset variables are
// allowed, as in config show.
func TestMarkdownHCL(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	blocks := markdownHCL(t, root)
	if len(blocks) < 10 {
		t.Fatalf("found %d HCL blocks in the markdown files; the extraction is broken", len(blocks))
	}
	for _, b := range blocks {
		t.Run(b.file+":"+strconv.Itoa(b.line), func(t *testing.T) {
			text := b.text
			switch b.info {
			case "":
			case "console":
				return // internal/console registers the block, and its tests load these
			case "lockfile":
				if _, err := lock.Parse([]byte(text), b.file); err != nil {
					t.Errorf("%s line %d is not a lockfile:\n%s\n%v", b.file, b.line, text, err)
				}
				return
			default:
				t.Fatalf("unknown fence words %q (lockfile and console are the only ones)", b.info)
			}
			text = placeholder.ReplaceAllString(text, `${1}"`+strings.Repeat("0", 64)+`"`)
			dir := t.TempDir()
			path := filepath.Join(dir, "nexus.hcl")
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(Options{Files: []string{path}, Dir: dir, Home: dir, AllowUnset: true, NoDefault: true,
				LookupEnv: func(string) (string, bool) { return "", false }})
			if err != nil {
				t.Errorf("%s line %d does not load:\n%s\n%v", b.file, b.line, text, err)
			}
		})
	}
}

// The README's gateway example loads as written, and says what it shows:
// its limits, per agent and global, are the ones the gateway gets.
func TestReadmeGatewayExample(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var block string
	for _, part := range strings.Split(string(raw), "```hcl\n")[1:] {
		body, _, _ := strings.Cut(part, "```")
		if strings.Contains(body, "max_sessions_per_agent") {
			block = body
			break
		}
	}
	if block == "" {
		t.Fatal("README.md has no hcl block with the gateway's limits")
	}
	// The block's TLS files are the reader's; they need not exist to load.
	cfg := mustLoad(t, "nexus.hcl", block, env("CLAUDE_TOKEN", "0123456789abcdef0123"))
	l := cfg.Gateway.Limits
	if l.MaxSessions != 1000 || l.MaxSessionsPerAgent != 100 || l.MaxRequestsPerAgent != 1024 || l.MaxInflightBytes != 512<<20 ||
		l.MaxInflightBytesPerAgent != 128<<20 || l.MaxUpstreamSessionsPerAgent != 32 || l.MaxBridgedUpstreams != 4096 || l.MaxBridgedUpstreamsPerAgent != 64 {
		t.Errorf("limits %+v", l)
	}
	if cfg.Gateway.InputTTL != 5*time.Minute {
		t.Errorf("input_ttl %v", cfg.Gateway.InputTTL)
	}
}
