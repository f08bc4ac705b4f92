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
	"github.com/nexus-mcp/nexus/internal/option"
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
			j.out.plugins = append(j.out.plugins, pluginBlock.jsonAll(j, m.val)...)
		case "filters":
			j.out.filters = append(j.out.filters, filterBlock.jsonAll(j, m.val)...)
		case "agents":
			j.out.agents = append(j.out.agents, agentBlock.jsonAll(j, m.val)...)
		case "gateway":
			if j.gatewayAt != nil {
				j.errAt(m.off, len(m.key)+2, "", fmt.Sprintf(`"gateway" is defined twice in this file (first on line %d)`, j.at(j.gatewayAt.off).Line),
					`Keep one "gateway" object per file: merge the two.`)
				continue
			}
			j.gatewayAt = m
			j.out.gateway = gatewayBlock.json(j, m.val)
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
	if p := option.CheckName("server", name); p != "" {
		j.errAt(off, len(name)+2, name, p, option.NameRule)
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
