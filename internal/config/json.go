package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/rules"
)

// The JSON front end reads every mcpServers dialect into the model:
//
//   - Claude Desktop: {"mcpServers": {name: {command, args, env}}}
//   - Claude Code .mcp.json: type, url, headers, ${VAR} and ${VAR:-default}
//   - Cursor: ${env:NAME}, ${userHome}, ${workspaceFolder}, envFile
//   - VS Code: {"servers": {...}, "inputs": [...]} with ${input:id}
//   - the Nexus array format {"servers": [{"name": ..., "command": [...]}]}
//     and the Nexus fields (env_passthrough, cwd, enabled, timeout, ...)
//
// plus the top-level keys of `nexus config compile --format nexus-json`
// (nexus, plugins, filters, agents), so that every HCL config has a JSON
// twin. Comments and trailing commas are accepted, as VS Code does.

var (
	topKeys    = []string{"mcpServers", "servers", "inputs", "nexus", "plugins", "filters", "agents", "gateway", "sampling", "lock", "audit", "telemetry"}
	serverKeys = append(append(append([]string{"name", "type", "command", "args"}, stdioOptions.JSONKeys()...), append([]string{"url"},
		httpOptions.JSONKeys()...)...), "enabled", "disabled", "timeout", "fail_if_no_tools", "confirm", "oauth", "plugin", "prefix", "start")
	// httpOnlyKeys are the server members that mean nothing without "url".
	httpOnlyKeys = append(httpOptions.JSONKeys(), "oauth")
	oauthKeys    = oauthOptions.JSONKeys()
	inputKeys    = []string{"type", "id", "description", "password", "default", "options", "command", "args"}
	pluginKeys   = []string{"path", "sha256"}
	filterKeys   = []string{"name", "kind", "wasm", "plugin", "sha256", "abi", "on_error", "mode", "config", "match", "limits", "entrypoint", "data_file", "rule"}
	ruleKeys     = []string{"when", "action", "reason", "set"}
	matchKeys    = []string{"servers", "tools", "methods"}
	limitKeys    = []string{"memory_mb", "timeout", "pool"}
	agentKeys    = []string{"permission", "servers", "allow", "deny", "mode", "tokens", "roots", "rules"}
)

// jsonFile decodes one JSON config file.
type jsonFile struct {
	*file
	ld  *loader
	x   *expander
	dir string // the file's directory, for relative paths
	out fileConfig

	gatewayAt *jmember // the "gateway" key, once seen
}

func (ld *loader) parseJSONFile(f *file) *fileConfig {
	data := stripJSONC(f.data)
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		syntaxError(f, err)
		return nil
	}
	j := &jsonFile{file: f, ld: ld, dir: ld.fileDir(f.src.File)}
	root := parseJSON(data)
	if root.kind != '{' {
		f.errAt(root.off, 1, "", "the top level of a config file must be an object, found "+root.kindName(),
			`Start from the Claude Desktop format: {"mcpServers": {"name": {"command": "...", "args": [...]}}}`)
		return nil
	}
	strictJSON(f, data, root.get("servers") != nil)
	j.x = ld.expander(nil)
	if in := root.get("inputs"); in != nil {
		j.inputs(in)
	}

	var serverKey *jmember
	blocks := false // a block a component registered (owned.go)
	for i := range root.obj {
		m := &root.obj[i]
		switch m.key {
		case "mcpServers", "servers":
			if serverKey != nil && serverKey.key != m.key {
				j.mixedFormats(serverKey, m)
				continue
			}
			serverKey = m
			j.servers(m)
		case "inputs":
		case "nexus":
			j.nexus(m.val)
		case "plugins":
			j.plugins(m.val)
		case "filters":
			j.filters(m.val)
		case "agents":
			j.agents(m.val)
		case "gateway":
			if j.gatewayAt != nil {
				j.errAt(m.off, len(m.key)+2, "", fmt.Sprintf(`"gateway" is defined twice in this file (first on line %d)`, j.at(j.gatewayAt.off).Line),
					`Keep one "gateway" object per file: merge the two.`)
				continue
			}
			j.gatewayAt = m
			j.gateway(m.val)
		case "sampling":
			j.out.sampling = samplingBlock.json(j, m.val)
		case "lock":
			j.out.lock = lockBlock.json(j, m.val)
		case "audit":
			j.out.audit = auditBlock.json(j, m.val)
		case "telemetry":
			j.out.telemetry = telemetryBlock.json(j, m.val)
		default:
			if ob := owned[m.key]; ob != nil {
				j.owned(m.key, m.val, ob)
				blocks = true
				continue
			}
			// Claude Desktop keeps its other settings in the same file, so
			// only a near miss of a key Nexus reads is worth a word.
			if k := suggestKey(m.key, topKeys); k != "" {
				f.warnAt(m.off, "", "unknown top-level key %q is ignored; did you mean %q?", m.key, k)
			}
		}
	}
	if serverKey == nil && root.get("plugins") == nil && root.get("filters") == nil && root.get("agents") == nil && root.get("nexus") == nil && root.get("gateway") == nil && root.get("sampling") == nil && root.get("lock") == nil && root.get("audit") == nil && root.get("telemetry") == nil && !blocks {
		f.errAt(root.off, 1, "", `no "mcpServers" or "servers" key at the top level`,
			`Use the Claude Desktop format: {"mcpServers": {"name": {"command": "...", "args": [...]}}}`)
	}
	return &j.out
}

// syntaxError reports invalid JSON with the line, a caret, and the usual
// mistakes (seed 1.9.6).
func syntaxError(f *file, err error) {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		f.err(fmt.Sprintf("invalid JSON: %v", err)).Cause = err
		return
	}
	msg := se.Error()
	off := max(0, int(se.Offset)-1) // Offset counts the bytes read, the bad one included
	if msg == "unexpected end of JSON input" {
		off = len(strings.TrimRight(string(f.data), " \t\r\n"))
	}
	src := f.at(off)
	note := "expected a value"
	switch {
	case strings.Contains(msg, "after object key:value pair"):
		note = "expected ',' or '}'"
	case strings.Contains(msg, "after array element"):
		note = "expected ',' or ']'"
	case strings.Contains(msg, "looking for beginning of object key string"):
		note = "expected a property name in double quotes"
	case strings.Contains(msg, "after object key"):
		note = "expected ':'"
	case strings.Contains(msg, "end of JSON input"):
		note = "the file ends here; a '}' or ']' is missing"
	}
	r := &diag.Report{Title: errTitle, Source: src, Cause: err,
		Problem: fmt.Sprintf("Invalid JSON syntax at line %d, column %d: %s", src.Line, src.Column, msg),
		Details: []diag.Section{{Lines: snippet(f.data, src.Line, src.Column, 1, note)}},
		Causes: []string{"Missing comma between properties", "Single quotes instead of double quotes",
			"Unquoted property names", "A missing closing brace or bracket"},
		CausesHeading: "Common JSON mistakes",
	}
	f.errs = append(f.errs, r)
}

func (j *jsonFile) mixedFormats(first, second *jmember) {
	l1 := j.at(first.off).Line
	r := j.errAt(second.off, len(second.key)+2, "",
		fmt.Sprintf("this file has both %q (line %d) and %q: two config formats are mixed in one file", first.key, l1, second.key))
	r.Causes = []string{`Servers were pasted from another client: Claude Desktop and Claude Code use "mcpServers", VS Code and the Nexus array format use "servers"`}
	r.Fix = []string{
		`Move every server under one key; both take the same server entries, e.g.` + "\n" +
			`{"mcpServers": {"test": {"command": "nexus", "args": ["testserver"]}}}`,
	}
}

// --- value decoding -------------------------------------------------------

// dec decodes the fields of one entity (server, filter, ...), reporting
// each problem at the value it is about.
type dec struct {
	j    *jsonFile
	x    *expander // nil = the file's
	who  string    // the server's (or filter's, ...) name
	what string    // "server", "filter", ...
	refs map[string]Template
}

// server is the Server line of a report: only servers have one.
func (d *dec) server() string {
	if d.what == "server" {
		return d.who
	}
	return ""
}

func (d *dec) subject() string { return subject(d.what, d.who) }

func (d *dec) typeErr(v *jval, field, want, example string) {
	r := d.j.errAt(v.off, 1, d.server(), fmt.Sprintf("%q must be %s, found %s", field, want, v.kindName()))
	if example != "" {
		r.Fix = []string{"Expected, for example: " + example}
	}
}

func (d *dec) errAt(v *jval, problem string, fix ...string) *diag.Report {
	return d.j.errAt(v.off, 1, d.server(), problem, fix...)
}

// keys warns about unknown fields of an object, suggesting the nearest
// known one, and reports whether v is an object at all.
func (d *dec) keys(v *jval, field string, known []string) bool {
	if v.kind != '{' {
		d.typeErr(v, field, "an object", "")
		return false
	}
	for _, m := range v.obj {
		if !contains(known, m.key) {
			msg := fmt.Sprintf("unknown field %q is ignored", m.key)
			if field != "" {
				msg = fmt.Sprintf("unknown field %q in %s is ignored", m.key, field)
			}
			if k := suggestKey(m.key, known); k != "" {
				msg += fmt.Sprintf("; did you mean %q?", k)
			}
			d.j.warnAt(m.off, d.subject(), "%s", msg)
		}
	}
	return true
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// str decodes a string, expanding references; ptr is where its template
// goes in refs ("" for a setting that takes no references).
func (d *dec) str(v *jval, field, ptr string) (string, bool) {
	if v.kind != '"' {
		d.typeErr(v, field, "a string", "")
		return "", false
	}
	if ptr == "" {
		return v.str, true
	}
	return d.expand(v, v.str, field, ptr)
}

func (d *dec) expander() *expander {
	if d.x != nil {
		return d.x
	}
	return d.j.x
}

func (d *dec) expand(v *jval, s, field, ptr string) (string, bool) {
	val, tmpl, err := d.expander().expand(s)
	if err != nil {
		d.refError(v, field, err)
		return "", false
	}
	if tmpl != nil {
		if d.refs == nil {
			d.refs = map[string]Template{}
		}
		d.refs[ptr] = tmpl
		if d.expander().allowUnset {
			d.warnUnset(v, tmpl)
		}
	}
	return val, true
}

// warnUnset notes references left unresolved for show and compile.
func (d *dec) warnUnset(v *jval, t Template) {
	for _, p := range t {
		if p.Ref != nil && p.Ref.Env != "" && !p.Ref.HasDefault {
			if _, ok := d.expander().lookup(p.Ref.Env); !ok {
				d.j.warnAt(v.off, d.subject(), "%s is not set in this environment", "${"+p.Ref.Env+"}")
			}
		}
	}
}

// refError points at the reference inside the string when it can find it.
func (d *dec) refError(v *jval, field string, err error) {
	var ue *unsetError
	if !errors.As(err, &ue) {
		d.errAt(v, fmt.Sprintf("%q: %v", field, err))
		return
	}
	off, width := v.off, 1
	end := min(len(d.j.data), v.off+len(v.str)*6+2) // escapes at most sextuple a string
	if i := strings.Index(string(d.j.data[v.off:end]), ue.ref); i >= 0 {
		off, width = v.off+i, len(ue.ref)
	}
	problem := fmt.Sprintf("environment variable %s is not set (used in %q of %s %q)", ue.name, field, d.what, d.who)
	if strings.HasPrefix(ue.ref, "${input:") {
		problem = fmt.Sprintf("input %q has no value (used in %q of %s %q)", ue.name, field, d.what, d.who)
		if len(ue.fix) > 0 && strings.HasPrefix(ue.fix[0], "Declare") {
			problem = fmt.Sprintf("input %q is not declared in this file's \"inputs\" (used in %q of %s %q)", ue.name, field, d.what, d.who)
		}
	}
	d.j.errAt(off, width, d.server(), problem, ue.fix...)
}

func (d *dec) strs(v *jval, field, ptr string) ([]string, bool) {
	if v.kind != '[' {
		d.typeErr(v, field, "an array of strings", `["a", "b"]`)
		return nil, false
	}
	out := make([]string, 0, len(v.arr))
	ok := true
	for i, e := range v.arr {
		if e.kind != '"' {
			d.errAt(e, fmt.Sprintf("%q must be an array of strings; element %d is %s", field, i, e.kindName()))
			ok = false
			continue
		}
		s := e.str
		if ptr != "" {
			var good bool
			if s, good = d.expand(e, s, field, pointer(ptr, i)); !good {
				ok = false
			}
		}
		out = append(out, s)
	}
	return out, ok
}

// strMap decodes an object of strings (env, headers). Numbers and booleans
// are taken as their text, as VS Code does for env.
func (d *dec) strMap(v *jval, field, ptr string) (map[string]string, bool) {
	if v.kind != '{' {
		d.typeErr(v, field, "an object of strings", `{"KEY": "value"}`)
		return nil, false
	}
	out := make(map[string]string, len(v.obj))
	ok := true
	for _, m := range v.obj {
		var s string
		switch m.val.kind {
		case '"':
			var good bool
			if s, good = d.expand(m.val, m.val.str, field+"."+m.key, pointer(ptr, m.key)); !good {
				ok = false
			}
		case '0':
			s = m.val.str
		case 't':
			s = "true"
		case 'f':
			s = "false"
		default:
			d.errAt(m.val, fmt.Sprintf("%q must hold strings; %q is %s", field, m.key, m.val.kindName()))
			ok = false
			continue
		}
		out[m.key] = s
	}
	return out, ok
}

func (d *dec) boolean(v *jval, field string) (bool, bool) {
	if v.kind != 't' && v.kind != 'f' {
		d.typeErr(v, field, "true or false", "")
		return false, false
	}
	return v.kind == 't', true
}

func (d *dec) integer(v *jval, field string, lo int) (int, bool) {
	f, err := strconv.ParseFloat(v.str, 64)
	if v.kind != '0' || err != nil || f != math.Trunc(f) || f < float64(lo) || f > 1e9 {
		if v.kind == '0' {
			d.errAt(v, fmt.Sprintf("%q must be a whole number of at least %d, found %s", field, lo, v.str))
		} else {
			d.typeErr(v, field, "a whole number", "")
		}
		return 0, false
	}
	return int(f), true
}

func (d *dec) duration(v *jval, field string) (time.Duration, bool) {
	var (
		dur time.Duration
		bad string
	)
	switch v.kind {
	case '0':
		f, _ := strconv.ParseFloat(v.str, 64)
		dur, bad = secondsDuration(f)
	case '"':
		dur, bad = parseDuration(v.str)
	default:
		d.typeErr(v, field, `a number of seconds or a duration string`, `30 or "30s"`)
		return 0, false
	}
	if bad != "" {
		d.errAt(v, fmt.Sprintf("%q: %s", field, bad), `Use seconds as a number (30) or a duration string ("30s", "2m").`)
		return 0, false
	}
	return dur, true
}

// anyValue decodes free-form settings (a plugin's or filter's config),
// expanding references in every string.
func (d *dec) anyValue(v *jval, field, ptr string) any {
	switch v.kind {
	case '"':
		s, _ := d.expand(v, v.str, field, ptr)
		return s
	case '{':
		m := make(map[string]any, len(v.obj))
		for _, e := range v.obj {
			m[e.key] = d.anyValue(e.val, field, pointer(ptr, e.key))
		}
		return m
	case '[':
		a := make([]any, len(v.arr))
		for i, e := range v.arr {
			a[i] = d.anyValue(e, field, pointer(ptr, i))
		}
		return a
	}
	return v.toAny()
}

// --- servers --------------------------------------------------------------

func (j *jsonFile) servers(m *jmember) {
	type entry struct {
		name string
		off  int
		v    *jval
	}
	var list []entry
	switch m.val.kind {
	case '{':
		for _, e := range m.val.obj {
			list = append(list, entry{e.key, e.off, e.val})
		}
	case '[':
		for i, e := range m.val.arr {
			n := e.get("name")
			if e.kind != '{' || n == nil || n.kind != '"' || n.str == "" {
				j.errAt(e.off, 1, "", fmt.Sprintf("entry %d of %q has no \"name\"", i, m.key),
					`In the array format every server needs "name", e.g. {"name": "test", "command": ["nexus", "testserver"]}.`)
				continue
			}
			list = append(list, entry{n.str, n.off, e})
		}
	default:
		j.errAt(m.val.off, 1, "", fmt.Sprintf("%q must be an object of servers by name (or, for \"servers\", an array), found %s", m.key, m.val.kindName()),
			`{"`+m.key+`": {"test": {"command": "nexus", "args": ["testserver"]}}}`)
		return
	}
	seen := map[string]int{}
	for _, e := range list {
		if first, dup := seen[e.name]; dup {
			l := j.at(first).Line
			j.errAt(e.off, len(e.name)+2, e.name, fmt.Sprintf("server %q is defined twice in this file (first on line %d)", e.name, l),
				"Rename or remove one of the two definitions; within one file a name must be unique.")
			continue
		}
		seen[e.name] = e.off
		if s := j.server(e.name, e.off, e.v, m.val.kind == '['); s != nil {
			j.out.servers = append(j.out.servers, s)
		}
	}
}

func (j *jsonFile) server(name string, off int, v *jval, array bool) *Server {
	errsBefore := len(j.errs)
	if p := checkName("server", name); p != "" {
		j.errAt(off, len(name)+2, name, p, nameRule)
		return nil
	}
	d := &dec{j: j, who: name, what: "server"}
	if !d.keys(v, "", serverKeys) {
		return nil
	}
	s := &Server{Name: name, Enabled: true, Source: j.at(off)}
	// A disabled server may refer to variables that are not set: people
	// switch servers off precisely when they cannot run them.
	if x := v.get("disabled"); x != nil && x.kind == 't' || v.get("enabled") != nil && v.get("enabled").kind == 'f' {
		lenient := *j.x
		lenient.allowUnset = true
		d.x = &lenient
	}
	var (
		cmdV, argsV, urlV, plugV, typeV *jval
		args                            []string
	)
	for _, m := range v.obj {
		f, val := m.key, m.val
		switch f {
		case "name":
			if n, ok := d.str(val, f, ""); ok && !array && n != name {
				j.warnAt(val.off, d.subject(), "\"name\" %q differs from the server's key; the key %q is used", n, name)
			}
		case "type":
			typeV = val
			s.Type, _ = d.str(val, f, "")
		case "command":
			cmdV = val
			switch val.kind {
			case '"':
				if c, ok := d.expand(val, val.str, f, "/command/0"); ok {
					s.Command = []string{c}
				}
			case '[':
				if len(val.arr) == 0 {
					d.errAt(val, `"command" as an array must hold at least one string`)
					continue
				}
				s.Command, _ = d.strs(val, f, "/command")
			default:
				d.typeErr(val, f, "a string (with \"args\") or an array of strings", `"npx" or ["npx", "-y", "pkg"]`)
			}
		case "args":
			argsV = val
			args, _ = d.strs(val, f, "/args")
		case "url":
			urlV = val
			if u, ok := d.str(val, f, "/url"); ok {
				s.URL = u
				if bad := checkURL(u); bad != "" && !hasRef(d.refs, "/url") {
					d.errAt(val, bad)
				}
			}
		case "enabled":
			if b, ok := d.boolean(val, f); ok && !b {
				s.Enabled = false
			}
		case "disabled":
			if b, ok := d.boolean(val, f); ok && b {
				s.Enabled = false
			}
		case "timeout":
			s.Timeout, _ = d.duration(val, f)
		case "fail_if_no_tools":
			s.FailIfNoTools, _ = d.boolean(val, f)
		case "confirm":
			if v, ok := d.str(val, f, ""); ok {
				if bad := checkConfirm(v); bad != "" {
					d.errAt(val, bad, `For example "confirm": "tool_calls" to confirm only tool calls.`)
				}
				s.Confirm = v
			}
		case "start":
			if v, ok := d.str(val, f, ""); ok {
				if bad := checkStart(v); bad != "" {
					d.errAt(val, bad, `For example "start": "lazy" to start the server on first use.`)
				}
				s.Start = v
			}
		case "prefix":
			if p, ok := d.str(val, f, ""); ok {
				if bad := checkPrefix(p); bad != "" {
					d.errAt(val, bad, `For example "prefix": "gh_", or "" for the tools' own names.`)
				}
				s.Prefix = &p
			}
		case "oauth":
			s.OAuth = j.oauth(d, val)
		case "plugin":
			plugV = val
			s.Plugin = j.pluginTransport(d, val)
		default:
			if o := stdioOptions.JSON(f); o != nil {
				o.Decode(&s.Stdio, jsonValue{d: d, v: val, name: f})
			} else if o := httpOptions.JSON(f); o != nil {
				o.Decode(&s.HTTP, jsonValue{d: d, v: val, name: f})
			}
		}
	}
	if cmdV != nil && cmdV.kind == '[' && argsV != nil {
		d.errAt(argsV, `"command" is an array and "args" is set too`,
			`Either put the arguments into the command array, or make "command" a string and keep "args".`)
	} else if len(s.Command) == 1 && cmdV != nil && cmdV.kind == '"' {
		if strings.TrimSpace(s.Command[0]) == "" {
			d.errAt(cmdV, `"command" is empty`)
		}
		for i := range args {
			if t, ok := d.refs[pointer("/args", i)]; ok {
				delete(d.refs, pointer("/args", i))
				d.refs[pointer("/command", i+1)] = t
			}
		}
		s.Command = append(s.Command, args...)
	}
	j.transport(d, s, v, off, cmdV, urlV, plugV, typeV)
	s.Refs = d.refs
	if len(j.errs) > errsBefore {
		return nil
	}
	return s
}

func hasRef(refs map[string]Template, ptr string) bool {
	_, ok := refs[ptr]
	return ok
}

// transport checks that exactly one of command, url and plugin is set and
// that "type" agrees with it (seed 1.9.5).
func (j *jsonFile) transport(d *dec, s *Server, v *jval, off int, cmdV, urlV, plugV, typeV *jval) {
	n := 0
	for _, x := range []*jval{cmdV, urlV, plugV} {
		if x != nil {
			n++
		}
	}
	switch {
	case n > 1:
		var set []string
		for _, f := range []struct {
			name string
			v    *jval
		}{{"command", cmdV}, {"url", urlV}, {"plugin", plugV}} {
			if f.v != nil {
				set = append(set, strconv.Quote(f.name))
			}
		}
		second := urlV
		if cmdV == nil || urlV == nil {
			second = plugV
		}
		d.errAt(second, fmt.Sprintf("both %s are set", strings.Join(set, " and ")),
			`Keep "command" for a local server started as a subprocess, "url" for a running HTTP server, or "plugin" for a transport plugin: exactly one.`)
		return
	case n == 0:
		j.errAt(off, len(s.Name)+2, s.Name, "Server has no transport configured",
			`Every MCP server needs exactly one of "command" (launch as a subprocess, stdio transport) or "url" (connect to a running server, HTTP transport).`,
			`Example stdio server: {"command": "nexus", "args": ["testserver"]}`,
			`Example HTTP server: {"url": "http://localhost:3000/mcp"}`)
		return
	}
	want := TypeStdio
	switch {
	case urlV != nil:
		want = TypeHTTP
	case plugV != nil:
		want = TypePlugin
	}
	switch s.Type {
	case "":
		s.Type = want
	case "stdio":
		if want != TypeStdio {
			d.errAt(typeV, `"type" is "stdio" but there is no "command"`, `Remove "type", or set "type": "http" for a "url".`)
		}
	case "http", "sse", "streamable-http", "streamableHttp":
		if want != TypeHTTP {
			d.errAt(typeV, fmt.Sprintf(`"type" is %q but there is no "url"`, s.Type), `Remove "type", or set "type": "stdio" for a "command".`)
		}
		if s.Type != TypeSSE {
			s.Type = TypeHTTP
		}
	case "plugin":
		if want != TypePlugin {
			d.errAt(typeV, `"type" is "plugin" but there is no "plugin"`)
		}
	default:
		d.errAt(typeV, fmt.Sprintf(`unknown "type" %q`, s.Type), `Use "stdio", "http" or "sse".`+didYouMean(s.Type, []string{"stdio", "http", "sse"}))
	}
	s.LegacySSE = s.Type == TypeSSE
	if s.Type != TypeStdio {
		for _, f := range []string{"args", "env", "envFile", "env_passthrough", "cwd"} {
			if x := v.get(f); x != nil {
				j.warnAt(x.off, d.subject(), "%q only applies to a stdio server (one with \"command\"); it is ignored", f)
			}
		}
	}
	if s.Type != TypeHTTP && s.Type != TypeSSE {
		for _, f := range httpOnlyKeys {
			if x := v.get(f); x != nil {
				j.warnAt(x.off, d.subject(), "%q only applies to an HTTP server (one with \"url\"); it is ignored", f)
			}
		}
	}
}

func (j *jsonFile) oauth(d *dec, v *jval) *OAuth {
	if !d.keys(v, "oauth", oauthKeys) {
		return nil
	}
	o := &OAuth{}
	for _, m := range v.obj {
		if opt := oauthOptions.JSON(m.key); opt != nil {
			opt.Decode(o, jsonValue{d: d, v: m.val, name: "oauth." + m.key})
		}
	}
	return o
}

func (j *jsonFile) pluginTransport(d *dec, v *jval) *PluginTransport {
	if !d.keys(v, "plugin", []string{"name", "config"}) {
		return nil
	}
	p := &PluginTransport{}
	if n := v.get("name"); n != nil {
		p.Name, _ = d.str(n, "plugin.name", "")
	} else {
		d.errAt(v, `"plugin" needs "name", the plugin block that provides the transport`, `"plugin": {"name": "ssh", "config": {...}}`)
	}
	if c := v.get("config"); c != nil {
		if c.kind != '{' {
			d.typeErr(c, "plugin.config", "an object", "")
		} else {
			p.Config, _ = d.anyValue(c, "plugin.config", "/plugin/config").(map[string]any)
		}
	}
	return p
}

// --- inputs, nexus, plugins, filters, agents ------------------------------

func (j *jsonFile) inputs(v *jval) {
	d := &dec{j: j, what: "input"}
	if v.kind != '[' {
		d.typeErr(v, "inputs", "an array", `[{"type": "promptString", "id": "api-key", "description": "API key", "password": true}]`)
		return
	}
	byID := map[string]Input{}
	for _, e := range v.arr {
		if !d.keys(e, "inputs entry", inputKeys) {
			continue
		}
		in := Input{Type: "promptString"}
		for _, m := range e.obj {
			switch m.key {
			case "type":
				// Any type loads; only promptString can be asked for on a
				// terminal, the others come from NEXUS_INPUT_<ID>.
				in.Type, _ = d.str(m.val, "type", "")
			case "id":
				in.ID, _ = d.str(m.val, "id", "")
			case "description":
				in.Description, _ = d.str(m.val, "description", "")
			case "password":
				in.Password, _ = d.boolean(m.val, "password")
			case "default":
				in.Default, _ = d.str(m.val, "default", "")
			}
		}
		if in.ID == "" {
			d.errAt(e, `an input needs an "id"`)
			continue
		}
		byID[in.ID] = in
		j.out.inputs = append(j.out.inputs, in)
	}
	j.x = j.ld.expander(byID)
}

// path resolves p, the value v of key, as resolvePath does, confined to
// the workspace in a workspace file (see loader.confined).
func (j *jsonFile) path(d *dec, v *jval, key, p string) (string, bool) {
	if p == "" {
		return "", true
	}
	full, err := j.ld.confined(p, j.dir, j.src.Layer)
	if err != nil {
		d.errAt(v, key+" "+err.Error())
		return "", false
	}
	return full, true
}

func (j *jsonFile) nexus(v *jval) {
	d := &dec{j: j, what: "nexus"}
	if !d.keys(v, "nexus", []string{"roots"}) {
		return
	}
	if r := v.get("roots"); r != nil {
		roots, _ := d.strs(r, "roots", "")
		for _, p := range roots {
			if p, ok := j.path(d, r, "roots", p); ok {
				j.out.roots = append(j.out.roots, p)
			}
		}
		j.out.hasRoots = true
	}
}

func (j *jsonFile) plugins(v *jval) {
	if v.kind != '{' {
		(&dec{j: j}).typeErr(v, "plugins", "an object of plugins by name", `{"ssh": {"path": "./plugins/ssh"}}`)
		return
	}
	seen := map[string]bool{}
	for _, m := range v.obj {
		d := &dec{j: j, who: m.key, what: "plugin"}
		if p := checkName("plugin", m.key); p != "" {
			j.errAt(m.off, len(m.key)+2, "", p, nameRule)
			continue
		}
		if seen[m.key] {
			j.errAt(m.off, len(m.key)+2, "", fmt.Sprintf("plugin %q is defined twice in this file", m.key))
			continue
		}
		seen[m.key] = true
		if !d.keys(m.val, "", pluginKeys) {
			continue
		}
		p := &Plugin{Name: m.key, Source: j.at(m.off)}
		if pv := m.val.get("path"); pv != nil {
			if s, ok := d.str(pv, "path", ""); ok {
				var err error
				if p.Path, err = j.ld.confined(s, j.dir, j.src.Layer); err != nil {
					d.errAt(pv, "plugin path "+err.Error())
				}
			}
		} else {
			d.errAt(m.val, fmt.Sprintf("plugin %q needs \"path\", the plugin binary", m.key))
		}
		if sv := m.val.get("sha256"); sv != nil {
			if s, ok := d.str(sv, "sha256", ""); ok {
				if bad := checkSHA256(s); bad != "" {
					d.errAt(sv, bad)
				}
				p.SHA256 = s
			}
		}
		j.out.plugins = append(j.out.plugins, p)
	}
}

func (j *jsonFile) filters(v *jval) {
	if v.kind != '[' {
		(&dec{j: j}).typeErr(v, "filters", "an array of filters, in the order they run", `[{"name": "pii", "kind": "sanitizer", "wasm": "./pii.wasm"}]`)
		return
	}
	seen := map[string]bool{}
	for i, e := range v.arr {
		n := e.get("name")
		if e.kind != '{' || n == nil || n.kind != '"' {
			j.errAt(e.off, 1, "", fmt.Sprintf("filter %d has no \"name\"", i))
			continue
		}
		name := n.str
		if p := checkName("filter", name); p != "" {
			j.errAt(n.off, len(name)+2, "", p, nameRule)
			continue
		}
		if seen[name] {
			j.errAt(n.off, len(name)+2, "", fmt.Sprintf("filter %q is defined twice in this file", name))
			continue
		}
		seen[name] = true
		d := &dec{j: j, who: name, what: "filter"}
		d.keys(e, "", filterKeys)
		f := &Filter{Name: name, OnError: "deny", Source: j.at(e.off)}
		var kindV, srcV *jval
		for _, m := range e.obj {
			val := m.val
			switch m.key {
			case "kind":
				kindV = val
				f.Kind, _ = d.str(val, "kind", "")
			case "wasm":
				if s, ok := d.str(val, "wasm", ""); ok {
					f.WASM, _ = j.path(d, val, "wasm", s)
				}
				srcV = val
			case "plugin":
				f.Plugin, _ = d.str(val, "plugin", "")
				srcV = val
			case "sha256":
				if s, ok := d.str(val, "sha256", ""); ok {
					if bad := checkSHA256(s); bad != "" {
						d.errAt(val, bad)
					}
					f.SHA256 = s
				}
			case "abi":
				if val.kind == '0' || val.kind == '"' {
					f.ABI = val.str
					if bad := checkABI(f.ABI); bad != "" {
						d.errAt(val, bad)
					}
				} else {
					d.typeErr(val, "abi", `1 or "opa"`, "")
				}
			case "entrypoint":
				f.Entrypoint, _ = d.str(val, "entrypoint", "")
			case "data_file":
				if s, ok := d.str(val, "data_file", ""); ok {
					f.DataFile, _ = j.path(d, val, "data_file", s)
				}
			case "on_error":
				if s, ok := d.str(val, "on_error", ""); ok {
					if bad := checkOnError(s); bad != "" {
						d.errAt(val, bad)
					}
					f.OnError = s
				}
			case "mode":
				if s, ok := d.choice(val, "mode", "mode", modes); ok {
					f.Mode = s
				}
			case "config":
				if val.kind != '{' {
					d.typeErr(val, "config", "an object", "")
				} else {
					f.Config, _ = d.anyValue(val, "config", "/config").(map[string]any)
				}
			case "match":
				f.Match = j.matches(d, val)
			case "limits":
				f.Limits = j.limits(d, val)
			case "rule":
				f.Rule = j.rule(d, val)
				srcV = val
			}
		}
		if kindV == nil {
			d.errAt(e, fmt.Sprintf("filter %q needs \"kind\": \"policy\" or \"sanitizer\"", name))
		} else if bad := oneOf("kind", f.Kind, kinds); bad != "" {
			d.errAt(kindV, bad)
		}
		if n := trues(f.WASM != "", f.Plugin != "", f.Rule != nil); n != 1 {
			at := srcV
			if at == nil {
				at = e
			}
			d.errAt(at, fmt.Sprintf("filter %q needs exactly one of \"wasm\" (a module path), \"plugin\" (a plugin name) or \"rule\" (a CEL rule)", name))
		} else if f.Rule != nil && f.Rule.When.Text != "" {
			j.compileRule(f, "")
		}
		if (f.Entrypoint != "" || f.DataFile != "") && f.WASM == "" {
			d.errAt(e, fmt.Sprintf("filter %q: \"entrypoint\" and \"data_file\" are for Rego policies, which are WASM modules (\"wasm\": \"policy.tar.gz\"), not plugins", name))
		}
		f.Refs = d.refs
		j.warnMissing(e, subject("filter", name), f.WASM)
		j.out.filters = append(j.out.filters, f)
	}
}

func (j *jsonFile) warnMissing(at *jval, who, p string) {
	if p != "" && !j.ld.exists(p) {
		j.warnAt(at.off, who, "%s does not exist (yet); the filter cannot run until it is built", p)
	}
}

func (j *jsonFile) matches(d *dec, v *jval) []Match {
	var items []*jval
	switch v.kind {
	case '{':
		items = []*jval{v}
	case '[':
		items = v.arr
	default:
		d.typeErr(v, "match", "an object or an array of objects", `{"servers": ["github"], "tools": ["delete_*"]}`)
		return nil
	}
	var out []Match
	for _, it := range items {
		if !d.keys(it, "match", matchKeys) {
			continue
		}
		var m Match
		for _, e := range it.obj {
			list, _ := d.strs(e.val, "match."+e.key, "")
			if bad := checkPatterns("match."+e.key, list); bad != "" {
				d.errAt(e.val, bad)
			}
			switch e.key {
			case "servers":
				m.Servers = list
			case "tools":
				m.Tools = list
			case "methods":
				m.Methods = list
			}
		}
		out = append(out, m)
	}
	return out
}

func (j *jsonFile) limits(d *dec, v *jval) Limits {
	var l Limits
	if !d.keys(v, "limits", limitKeys) {
		return l
	}
	for _, e := range v.obj {
		switch e.key {
		case "memory_mb":
			l.MemoryMB, _ = d.integer(e.val, "limits.memory_mb", 1)
		case "timeout":
			l.Timeout, _ = d.duration(e.val, "limits.timeout")
		case "pool":
			l.Pool, _ = d.integer(e.val, "limits.pool", 1)
		}
	}
	return l
}

func (j *jsonFile) agents(v *jval) {
	if v.kind != '{' {
		(&dec{j: j}).typeErr(v, "agents", "an object of agents by name", `{"ci": {"permission": "sandboxed"}}`)
		return
	}
	seen := map[string]bool{}
	for _, m := range v.obj {
		if p := checkName("agent", m.key); p != "" {
			j.errAt(m.off, len(m.key)+2, "", p, nameRule)
			continue
		}
		if seen[m.key] {
			j.errAt(m.off, len(m.key)+2, "", fmt.Sprintf("agent %q is defined twice in this file", m.key))
			continue
		}
		seen[m.key] = true
		d := &dec{j: j, who: m.key, what: "agent"}
		if !d.keys(m.val, "", agentKeys) {
			continue
		}
		a := &Agent{Name: m.key, Permission: "sandboxed", Source: j.at(m.off)}
		for _, e := range m.val.obj {
			switch e.key {
			case "permission":
				if s, ok := d.choice(e.val, "permission", "permission", permissions); ok {
					a.Permission = s
				}
			case "servers":
				a.Servers, _ = d.strs(e.val, "servers", "")
			case "roots":
				var ok bool
				if a.Roots, ok = d.strs(e.val, "roots", ""); ok {
					if p := checkAgentRoots(a.Roots); p != "" {
						d.errAt(e.val, p, agentRootsFix)
					}
				}
			case "mode":
				if s, ok := d.choice(e.val, "mode", "mode", modes); ok {
					a.Mode = s
				}
			case "tokens":
				var ok bool
				if a.Tokens, ok = d.strs(e.val, "tokens", "/tokens"); ok {
					a.Refs = d.refs
					for i := range a.Tokens {
						switch bad, isErr := checkToken(a, i, j.ld.opts.AllowUnset); {
						case bad == "":
						case isErr:
							d.errAt(e.val.arr[i], bad, tokenFix(m.key))
						default:
							j.warnAt(e.val.arr[i].off, d.subject(), "%s", bad)
						}
					}
				}
			case "rules":
				a.Rules = j.agentRules(d, m.key, e.val)
			case "allow", "deny":
				list, _ := d.strs(e.val, e.key, "")
				if bad := checkPatterns(e.key, list); bad != "" {
					d.errAt(e.val, bad)
				}
				if e.key == "allow" {
					a.Allow = list
				} else {
					a.Deny = list
				}
			}
		}
		if len(d.refs) > 0 {
			a.Refs = d.refs
		}
		j.out.agents = append(j.out.agents, a)
	}
}

// choice reads a string that must be one of allowed (named name in the
// message); a value outside them is reported and still returned.
func (d *dec) choice(v *jval, field, name string, allowed []string) (string, bool) {
	s, ok := d.str(v, field, "")
	if ok {
		if bad := oneOf(name, s, allowed); bad != "" {
			d.errAt(v, bad)
		}
	}
	return s, ok
}

// rule decodes a filter's "rule": {"when": ..., "action": ..., "reason":
// ..., "set": {"arguments.limit": "100"}}; the caller compiles it.
func (j *jsonFile) rule(d *dec, v *jval) *Rule {
	if !d.keys(v, "rule", ruleKeys) {
		return nil
	}
	r := &Rule{}
	for _, e := range v.obj {
		switch e.key {
		case "when":
			if s, ok := d.str(e.val, "rule.when", ""); ok {
				r.When = rules.Expr{Text: s, Source: j.at(e.val.off + 1)}
			}
		case "action":
			if s, ok := d.choice(e.val, "rule.action", "action", ruleActions); ok {
				r.Action = s
			}
		case "reason":
			r.Reason, _ = d.str(e.val, "rule.reason", "")
		case "set":
			if e.val.kind != '{' {
				d.typeErr(e.val, "rule.set", "an object of paths and expressions", `{"arguments.limit": "100"}`)
				continue
			}
			r.Set = []rules.Assign{}
			for _, m := range e.val.obj {
				if s, ok := d.str(m.val, "rule.set."+m.key, ""); ok {
					r.Set = append(r.Set, rules.Assign{Path: m.key, Value: rules.Expr{Text: s, Source: j.at(m.val.off + 1)}})
				}
			}
		}
	}
	if r.When.Text == "" {
		d.errAt(v, "a rule needs \"when\": the CEL expression that says when it acts", `{"when": "tool.name.startsWith('delete_')", "action": "deny"}`)
	}
	return r
}

// agentRules decodes an agent's "rules": [{"name": ..., "when": ...,
// "action": ...}] and compiles each.
func (j *jsonFile) agentRules(d *dec, agent string, v *jval) []*Filter {
	if v.kind != '[' {
		d.typeErr(v, "rules", "an array of rules", `[{"name": "no-deletes", "when": "tool.name.startsWith('delete_')", "action": "deny"}]`)
		return nil
	}
	var out []*Filter
	seen := map[string]bool{}
	for _, e := range v.arr {
		n := e.get("name")
		if e.kind != '{' || n == nil || n.kind != '"' {
			d.errAt(e, "each rule needs a \"name\"")
			continue
		}
		if p := checkName("rule", n.str); p != "" {
			j.errAt(n.off, len(n.str)+2, "", p, nameRule)
			continue
		}
		if seen[n.str] {
			d.errAt(n, fmt.Sprintf("agent %q has two rules called %q", agent, n.str))
			continue
		}
		seen[n.str] = true
		f := &Filter{Name: n.str, Kind: "policy", OnError: "deny", Source: j.at(e.off)}
		var body []jmember
		for _, m := range e.obj {
			switch m.key {
			case "name":
			case "kind":
				if s, ok := d.choice(m.val, "kind", "kind", kinds); ok {
					f.Kind = s
				}
			case "mode":
				if s, ok := d.choice(m.val, "mode", "mode", modes); ok {
					f.Mode = s
				}
			default:
				body = append(body, m)
			}
		}
		f.Rule = j.rule(d, &jval{kind: '{', off: e.off, obj: body})
		if f.Rule != nil && f.Rule.When.Text != "" {
			j.compileRule(f, agent)
		}
		out = append(out, f)
	}
	return out
}

func trues(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// strictJSON warns when a file that a strict-JSON client reads (Claude
// Desktop, Claude Code, Cursor: JSON.parse) has comments or trailing
// commas. Nexus accepts them, as VS Code does, but the client would refuse
// the file, and a person would learn that from the client, late.
func strictJSON(f *file, stripped []byte, vscode bool) {
	name := filepath.ToSlash(f.src.File)
	if vscode || strings.Contains(name, ".vscode/") || strings.HasSuffix(name, ".jsonc") || nexusOnly(name) {
		return
	}
	// stripJSONC blanks comments and trailing commas in place, so the
	// bytes that differ are theirs: a run starting "//" or "/*" is a
	// comment, a lone ',' a trailing comma.
	first, comments, commas := -1, 0, 0
	for i := 0; i < len(f.data) && i < len(stripped); i++ {
		if f.data[i] == stripped[i] || i > 0 && f.data[i-1] != stripped[i-1] {
			continue
		}
		switch {
		case f.data[i] == ',':
			commas++
		case f.data[i] == '/':
			comments++
		default:
			continue // the next line of a /* */ comment
		}
		if first < 0 {
			first = i
		}
	}
	if first < 0 {
		return
	}
	client, rejects := "Claude Desktop and Claude Code", "reject"
	switch base := filepath.Base(name); {
	case base == "claude_desktop_config.json":
		client, rejects = "Claude Desktop", "rejects"
	case base == ".mcp.json":
		client, rejects = "Claude Code", "rejects"
	case strings.Contains(name, ".cursor/"):
		client, rejects = "Cursor", "rejects"
	}
	var what []string
	if comments > 0 {
		what = append(what, count(comments, "comment"))
	}
	if commas > 0 {
		what = append(what, count(commas, "trailing comma"))
	}
	f.warnAt(first, "", "this file has %s (the first here), which %s %s: it reads strict JSON. Nexus accepts them, as VS Code does; remove them if %s loads this file too",
		strings.Join(what, " and "), client, rejects, client)
}

// count is "1 comment" or "3 comments".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// nexusOnly says whether only Nexus reads the file: a layer's
// .nexus/mcp.json, or a file named for Nexus (nexus.json, the output of
// config compile --format nexus-json), which is JSONC like VS Code's.
func nexusOnly(name string) bool {
	base := strings.ToLower(path.Base(name))
	return strings.HasPrefix(name, ".nexus/") || strings.Contains(name, "/.nexus/") || strings.HasPrefix(base, "nexus")
}

// fileDir is the directory relative paths in a file start from; the
// built-in default has none, so its paths start at the working directory.
func (ld *loader) fileDir(p string) string {
	if p == "" {
		return ld.dir
	}
	return filepath.Dir(ld.abs(p))
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
