package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nexus-mcp/nexus/host/diag"
)

// MaxFileSize bounds a config file; a larger one is rejected before parsing.
const MaxFileSize = 10 << 20

// Server is one MCP server in the canonical mcpServers model.
type Server struct {
	Name string
	// Type is "stdio", "http" or "sse".
	Type           string
	Command        []string // executable and arguments, merged
	Env            map[string]string
	EnvPassthrough []string
	Cwd            string
	URL            string
	Headers        map[string]string
	Enabled        bool
	Timeout        time.Duration // per request; 0 = the host default
	FailIfNoTools  bool
	Source         diag.Source
}

// Config is a loaded configuration.
type Config struct {
	Servers []*Server // sorted by name
	Files   []string  // files it was loaded from
}

// Server returns the server called name, or nil.
func (c *Config) Server(name string) *Server {
	for _, s := range c.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Names lists the configured server names.
func (c *Config) Names() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.Name
	}
	return out
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Error is a config problem a person can act on; it renders as a diag.Report.
type Error = diag.Report

// LoadFile reads a config file in the mcpServers JSON model.
func LoadFile(path, layer string) (*Config, error) {
	src := diag.Source{File: path, Layer: layer}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fileError(src, fmt.Sprintf("cannot read the config file: %v", err), "Check the path passed to --config or NEXUS_CONFIG.")
	}
	if fi.IsDir() {
		return nil, fileError(src, "the config path is a directory, not a file", "Point --config at a JSON file such as examples/configs/testserver.json.")
	}
	if fi.Size() > MaxFileSize {
		return nil, fileError(src, fmt.Sprintf("the config file is %d bytes, over the 10 MiB limit", fi.Size()), "A config file this large is almost certainly not a config file; check the path.")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(src, fmt.Sprintf("cannot open the config file: %v", err), "Check the file's permissions.")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fileError(src, fmt.Sprintf("reading the config file: %v", err), "")
	}
	if len(data) > MaxFileSize {
		return nil, fileError(src, "the config file grew past the 10 MiB limit while it was read", "")
	}
	cfg, err := Parse(data, src)
	if err != nil {
		return nil, err
	}
	cfg.Files = []string{path}
	return cfg, nil
}

func fileError(src diag.Source, problem, fix string) *diag.Report {
	r := &diag.Report{Title: "MCP Configuration Error", Source: src, Problem: problem}
	if fix != "" {
		r.Fix = []string{fix}
	}
	return r
}

// Parse decodes a config in either format of the mcpServers model:
// {"mcpServers": {name: {command, args, env, ...}}} or
// {"servers": {name: {command: [...]}}} / {"servers": [{"name": ..., ...}]}.
func Parse(data []byte, src diag.Source) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fileError(src, "the config file is empty", `Add at least {"mcpServers": {}}.`)
	}
	if !utf8.Valid(data) {
		return nil, fileError(src, "the config file is not valid UTF-8", "Save the file as UTF-8.")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, jsonError(data, src, err)
	}
	cfg := &Config{}
	seen := map[string]bool{}
	add := func(name string, raw json.RawMessage) error {
		s, err := parseServer(name, raw, src)
		if err != nil {
			return err
		}
		if seen[name] {
			return &diag.Report{Title: "MCP Configuration Error", Server: name, Source: src,
				Problem: fmt.Sprintf("server %q is defined twice in this file", name),
				Fix:     []string{"Rename or remove one of the two definitions."}}
		}
		seen[name] = true
		cfg.Servers = append(cfg.Servers, s)
		return nil
	}
	var errs []error
	for _, key := range []string{"mcpServers", "servers"} {
		raw, ok := top[key]
		if !ok {
			continue
		}
		raw = bytes.TrimSpace(raw)
		switch {
		case len(raw) > 0 && raw[0] == '{':
			var m map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, jsonError(data, src, err)
			}
			names := make([]string, 0, len(m))
			for n := range m {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if err := add(n, m[n]); err != nil {
					errs = append(errs, err)
				}
			}
		case len(raw) > 0 && raw[0] == '[':
			var list []json.RawMessage
			if err := json.Unmarshal(raw, &list); err != nil {
				return nil, jsonError(data, src, err)
			}
			for i, item := range list {
				var n struct {
					Name string `json:"name"`
				}
				if err := json.Unmarshal(item, &n); err != nil || n.Name == "" {
					errs = append(errs, &diag.Report{Title: "MCP Configuration Error", Source: src,
						Problem: fmt.Sprintf("entry %d of %q has no \"name\"", i, key),
						Fix:     []string{`In the array format every server needs "name", e.g. {"name": "test", "command": ["nexus", "testserver"]}.`}})
					continue
				}
				if err := add(n.Name, item); err != nil {
					errs = append(errs, err)
				}
			}
		default:
			errs = append(errs, &diag.Report{Title: "MCP Configuration Error", Source: src,
				Problem: fmt.Sprintf("%q must be an object of servers by name (or, for \"servers\", an array)", key)})
		}
	}
	if _, a := top["mcpServers"]; !a {
		if _, b := top["servers"]; !b {
			errs = append(errs, &diag.Report{Title: "MCP Configuration Error", Source: src,
				Problem: `no "mcpServers" or "servers" key at the top level`,
				Fix:     []string{`Use the Claude Desktop format: {"mcpServers": {"name": {"command": "...", "args": [...]}}}`}})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.Slice(cfg.Servers, func(i, j int) bool { return cfg.Servers[i].Name < cfg.Servers[j].Name })
	return cfg, nil
}

type rawServer struct {
	Name           string            `json:"name"`
	Type           string            `json:"type"`
	Command        json.RawMessage   `json:"command"`
	Args           []string          `json:"args"`
	Env            map[string]string `json:"env"`
	EnvPassthrough []string          `json:"env_passthrough"`
	Cwd            string            `json:"cwd"`
	URL            string            `json:"url"`
	Headers        map[string]string `json:"headers"`
	Enabled        *bool             `json:"enabled"`
	Disabled       bool              `json:"disabled"`
	Timeout        json.RawMessage   `json:"timeout"`
	FailIfNoTools  bool              `json:"fail_if_no_tools"`
}

func parseServer(name string, raw json.RawMessage, src diag.Source) (*Server, error) {
	report := func(problem string, fix ...string) error {
		return &diag.Report{Title: "MCP Configuration Error", Server: name, Source: src, Problem: problem, Fix: fix}
	}
	if !nameRE.MatchString(name) {
		return nil, report(fmt.Sprintf("server name %q is not allowed", name), "Use 1 to 64 letters, digits, '_' or '-'.")
	}
	var r rawServer
	if err := json.Unmarshal(raw, &r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, report(fmt.Sprintf("field %q must be %s, not a JSON %s", te.Field, jsonKind(te.Type.String()), te.Value))
		}
		return nil, report(fmt.Sprintf("invalid server entry: %v", err))
	}
	s := &Server{Name: name, Env: r.Env, EnvPassthrough: r.EnvPassthrough, Cwd: r.Cwd, URL: r.URL, Headers: r.Headers,
		Enabled: !r.Disabled, FailIfNoTools: r.FailIfNoTools, Source: src, Type: r.Type}
	if r.Enabled != nil {
		s.Enabled = *r.Enabled && !r.Disabled
	}
	cmd := bytes.TrimSpace(r.Command)
	switch {
	case len(cmd) == 0 || string(cmd) == "null":
	case cmd[0] == '"':
		var c string
		json.Unmarshal(cmd, &c)
		if strings.TrimSpace(c) == "" {
			return nil, report(`"command" is empty`)
		}
		s.Command = append([]string{c}, r.Args...)
	case cmd[0] == '[':
		var c []string
		if err := json.Unmarshal(cmd, &c); err != nil || len(c) == 0 {
			return nil, report(`"command" as an array must hold at least one string`)
		}
		if len(r.Args) > 0 {
			return nil, report(`"command" is an array and "args" is set too`,
				`Either put the arguments into the command array, or make "command" a string and keep "args".`)
		}
		s.Command = c
	default:
		return nil, report(`"command" must be a string (with "args") or an array of strings`)
	}
	switch {
	case s.Command != nil && s.URL != "":
		return nil, report("both \"command\" and \"url\" are set", "Keep \"command\" for a local server started as a subprocess, or \"url\" for a running HTTP server, not both.")
	case s.Command == nil && s.URL == "":
		return nil, report("Server has no transport configured",
			`Every MCP server needs exactly one of "command" (launch as a subprocess, stdio transport) or "url" (connect to a running server, HTTP transport).`,
			`Example stdio server: {"command": "nexus", "args": ["testserver"]}`,
			`Example HTTP server: {"url": "http://localhost:3000/mcp"}`)
	}
	switch s.Type {
	case "":
		if s.Command != nil {
			s.Type = "stdio"
		} else {
			s.Type = "http"
		}
	case "stdio":
		if s.Command == nil {
			return nil, report(`"type" is "stdio" but there is no "command"`)
		}
	case "http", "sse", "streamable-http":
		if s.URL == "" {
			return nil, report(fmt.Sprintf(`"type" is %q but there is no "url"`, s.Type))
		}
		if s.Type == "streamable-http" {
			s.Type = "http"
		}
	default:
		return nil, report(fmt.Sprintf(`unknown "type" %q`, s.Type), `Use "stdio", "http" or "sse".`)
	}
	if t := bytes.TrimSpace(r.Timeout); len(t) > 0 && string(t) != "null" {
		d, err := parseDuration(t)
		if err != nil {
			return nil, report(fmt.Sprintf(`"timeout": %v`, err), `Use seconds as a number (30) or a duration string ("30s", "2m").`)
		}
		s.Timeout = d
	}
	return s, nil
}

func parseDuration(raw json.RawMessage) (time.Duration, error) {
	if raw[0] == '"' {
		var s string
		json.Unmarshal(raw, &s)
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%q is not a positive duration", s)
		}
		return d, nil
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err != nil || secs <= 0 {
		return 0, fmt.Errorf("%s is not a positive number of seconds", raw)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map["):
		return "an object"
	case goType == "string":
		return "a string"
	case goType == "bool", goType == "*bool":
		return "true or false"
	default:
		return "a " + goType
	}
}

// jsonError turns a syntax error into a report with the line, a caret and
// the usual mistakes (seed 1.9.6).
func jsonError(data []byte, src diag.Source, err error) error {
	var se *json.SyntaxError
	off := int64(-1)
	if errors.As(err, &se) {
		off = se.Offset
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		off = te.Offset
	}
	r := &diag.Report{Title: "MCP Configuration Error", Source: src, Cause: err}
	if off < 0 {
		r.Problem = fmt.Sprintf("invalid JSON: %v", err)
		return r
	}
	line, col := lineCol(data, off)
	src.Line, src.Column = line, col
	r.Source = src
	r.Problem = fmt.Sprintf("Invalid JSON syntax at line %d, column %d: %v", line, col, err)
	r.Details = []diag.Section{{Lines: snippet(data, line, col)}}
	r.Causes = []string{"Missing comma between properties", "Trailing comma after last item", "Single quotes instead of double quotes", "Unquoted property names"}
	return r
}

func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	// The offset points just past the offending byte.
	if off > 0 {
		off--
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return line, utf8.RuneCount(data[start:off]) + 1
}

func snippet(data []byte, line, col int) []string {
	lines := strings.Split(string(data), "\n")
	var out []string
	for n := max(1, line-1); n <= min(len(lines), line+1); n++ {
		text := strings.TrimRight(lines[n-1], "\r")
		if len(text) > 160 {
			text = text[:160] + "…"
		}
		out = append(out, fmt.Sprintf("%4d │ %s", n, text))
		if n == line {
			out = append(out, fmt.Sprintf("     │ %s^", strings.Repeat(" ", max(0, col-1))))
		}
	}
	return out
}
