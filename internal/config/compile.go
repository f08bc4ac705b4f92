package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// Compile targets.
const (
	// FormatMCPServers is {"mcpServers": ...} as Claude Desktop and Claude
	// Code read it: "type" only for HTTP servers, ${NAME} for secrets.
	FormatMCPServers = "mcpservers"
	// FormatVSCode is VS Code's .vscode/mcp.json: {"servers", "inputs"}.
	FormatVSCode = "vscode"
	// FormatNexusJSON is the mcpServers JSON with every Nexus setting; it
	// loads back to the same model.
	FormatNexusJSON = "nexus-json"
)

// Formats lists the compile targets.
var Formats = []string{FormatMCPServers, FormatVSCode, FormatNexusJSON}

// Compile writes cfg in a target format. The output is deterministic
// (sorted keys, filters in run order). Secrets are written as references,
// never as values, and everything the target cannot express comes back as
// a warning rather than being dropped silently.
//
// A credential written into the config file itself (URL userinfo, a
// token in a query parameter, a literal Authorization header, an env
// value whose name says it is a secret) is masked, with a warning to move
// it to a variable; CompileShowingSecrets writes it as it is.
func Compile(cfg *Config, format string) ([]byte, []Warning, error) {
	return compile(cfg, format, false)
}

// CompileShowingSecrets is Compile that writes literal credentials as they
// are (`--show-secrets`); secrets from variables stay references.
func CompileShowingSecrets(cfg *Config, format string) ([]byte, []Warning, error) {
	return compile(cfg, format, true)
}

func compile(cfg *Config, format string, show bool) ([]byte, []Warning, error) {
	c := newCompiler(cfg, format, show, true)
	var doc map[string]any
	switch format {
	case FormatMCPServers:
		doc = map[string]any{"mcpServers": c.servers()}
	case FormatVSCode:
		doc = map[string]any{"servers": c.servers()}
	case FormatNexusJSON:
		doc = map[string]any{"mcpServers": c.servers()}
		c.nexusExtras(doc)
	default:
		return nil, nil, fmt.Errorf("unknown format %q; use %s", format, quoteList(Formats))
	}
	if ins := c.usedInputs(); len(ins) > 0 {
		doc["inputs"] = ins
	}
	if format != FormatNexusJSON {
		c.lostGlobals()
	}
	c.refWarnings()
	c.maskWarning()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, nil, err
	}
	return b.Bytes(), c.warns, nil
}

// newCompiler writes cfg in format; forClient (Compile, not config show's
// view) also warns of what the client's environment must supply.
func newCompiler(cfg *Config, format string, showSecrets, forClient bool) *compiler {
	c := &compiler{cfg: cfg, format: format, envs: map[string]bool{}, inputs: map[string]bool{}, showSecrets: showSecrets}
	if forClient {
		c.named = map[string]bool{}
	}
	return c
}

type compiler struct {
	cfg    *Config
	format string
	warns  []Warning
	envs   map[string]bool // environment variables the output refers to
	named  map[string]bool // sensitive variables warned of (Ref.Named); nil: no such warnings
	inputs map[string]bool // inputs the output refers to
	dollar bool            // a literal ${ was written where it would be expanded

	showSecrets bool     // write literal credentials as they are
	masked      []string // where literal credentials were masked ("server \"a\" url")
	cur         string   // what is being written, for masked: `server "a"`
}

func (c *compiler) warn(s *Server, format string, args ...any) {
	w := Warning{Message: fmt.Sprintf(format, args...)}
	if s != nil {
		w.Source, w.Subject = s.Source, subject("server", s.Name)
	}
	c.warns = append(c.warns, w)
}

// str writes a value: its template when it came from a secret, else the
// value itself (with ${ escaped where the target would expand it), its
// credentials masked.
func (c *compiler) str(refs map[string]Template, ptr, val string) string {
	return c.value(refs, ptr, val, maskCredential(ptr, val))
}

// arg is str for a command's argument, masked knowing the word before it
// ("--token abc").
func (c *compiler) arg(refs map[string]Template, ptr, prev, val string) string {
	return c.value(refs, ptr, val, diag.MaskArg(prev, val))
}

// value is str with val's masked form given (written unless val is a
// reference or secrets are shown).
func (c *compiler) value(refs map[string]Template, ptr, val, masked string) string {
	t, ok := refs[ptr]
	if !ok && !c.showSecrets {
		if masked != val {
			c.masked = append(c.masked, strings.TrimSpace(c.cur+" "+fieldName(ptr)))
			val = masked
		}
	}
	if !ok {
		if strings.Contains(val, "${") {
			if c.format == FormatNexusJSON {
				return strings.ReplaceAll(val, "${", "$${")
			}
			c.dollar = true
		}
		return val
	}
	return t.Render(func(r Ref) string {
		if r.Named != "" && c.named != nil && !c.named[r.Named] {
			c.named[r.Named] = true
			c.warns = append(c.warns, Warning{Message: fmt.Sprintf("sensitive variable %q is written as a reference to $%s, after its own name: set %s in the client's environment (or give the variable default = env(\"NAME\") to read another)", r.Named, r.Env, r.Env)})
		}
		switch {
		case r.Input != "":
			c.inputs[r.Input] = true
			switch c.format {
			case FormatVSCode, FormatNexusJSON:
				return "${input:" + r.Input + "}"
			}
			// Claude has no inputs; Nexus reads the same variable when it
			// has no terminal to ask on.
			name := Input{ID: r.Input}.EnvName()
			c.envs[name] = true
			return "${" + name + "}"
		case c.format == FormatVSCode:
			c.envs[r.Env] = true
			if r.HasDefault {
				c.warns = append(c.warns, Warning{Message: fmt.Sprintf("VS Code has no ${NAME:-default}: ${%s:-%s} is written as ${env:%s}, without its default", r.Env, r.Default, r.Env)})
			}
			return "${env:" + r.Env + "}"
		case r.HasDefault:
			c.envs[r.Env] = true
			return "${" + r.Env + ":-" + r.Default + "}"
		}
		c.envs[r.Env] = true
		return "${" + r.Env + "}"
	})
}

func (c *compiler) strMap(refs map[string]Template, base string, m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = c.str(refs, pointer(base, k), v)
	}
	return out
}

// anyMap writes free-form config, strings through str.
func (c *compiler) anyValue(refs map[string]Template, ptr string, v any) any {
	switch v := v.(type) {
	case string:
		return c.str(refs, ptr, v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = c.anyValue(refs, pointer(ptr, k), e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = c.anyValue(refs, pointer(ptr, i), e)
		}
		return out
	}
	return v
}

func (c *compiler) servers() map[string]any {
	out := map[string]any{}
	for _, s := range c.cfg.Servers {
		if e := c.server(s); e != nil {
			out[s.Name] = e
		}
	}
	return out
}

func (c *compiler) server(s *Server) map[string]any {
	c.cur = subject("server", s.Name)
	defer func() { c.cur = "" }()
	nexus := c.format == FormatNexusJSON
	if !s.Enabled && !nexus {
		c.warn(s, "is disabled, so it is left out (%s has no way to mark a server disabled)", c.format)
		return nil
	}
	if s.Type == TypePlugin && !nexus {
		c.warn(s, "uses transport plugin %q, which %s cannot express; it is left out", s.Plugin.Name, c.format)
		return nil
	}
	e := map[string]any{}
	switch s.Type {
	case TypeStdio:
		if c.format == FormatVSCode {
			e["type"] = "stdio"
		}
		e["command"] = c.str(s.Refs, "/command/0", s.Command[0])
		if len(s.Command) > 1 {
			args := make([]any, len(s.Command)-1)
			for i, a := range s.Command[1:] {
				args[i] = c.arg(s.Refs, pointer("/command", i+1), s.Command[i], a)
			}
			e["args"] = args
		}
		jsonOptions(c, e, s, stdioOptions, &s.Stdio)
	case TypeHTTP, TypeSSE:
		if s.Type == TypeSSE || !nexus {
			e["type"] = s.Type
		}
		e["url"] = c.str(s.Refs, "/url", s.URL)
		jsonOptions(c, e, s, httpOptions, &s.HTTP)
		if nexus {
			if o := s.OAuth; o != nil {
				oe := map[string]any{}
				jsonOptions(c, oe, s, oauthOptions, o)
				e["oauth"] = oe
			}
		} else if s.OAuth != nil {
			c.warn(s, "oauth cannot be expressed in %s; the client runs its own OAuth flow", c.format)
		}
	case TypePlugin:
		p := map[string]any{"name": s.Plugin.Name}
		if s.Plugin.Config != nil {
			p["config"] = c.anyValue(s.Refs, "/plugin/config", s.Plugin.Config)
		}
		e["plugin"] = p
	}
	if nexus {
		if !s.Enabled {
			e["enabled"] = false
		}
		if s.Timeout > 0 {
			e["timeout"] = s.Timeout.String()
		}
		if s.FailIfNoTools {
			e["fail_if_no_tools"] = true
		}
		if s.Confirm != "" {
			e["confirm"] = s.Confirm
		}
		if s.Prefix != nil {
			e["prefix"] = *s.Prefix
		}
		if s.Start != "" {
			e["start"] = s.Start
		}
	} else {
		if s.Timeout > 0 {
			c.warn(s, "timeout %s cannot be expressed in %s", s.Timeout, c.format)
		}
		if s.FailIfNoTools {
			c.warn(s, "fail_if_no_tools cannot be expressed in %s", c.format)
		}
		if s.Confirm != "" {
			c.warn(s, "confirm %q cannot be expressed in %s; the client asks as it does for any server", s.Confirm, c.format)
		}
		if s.Start != "" {
			c.warn(s, "start %q cannot be expressed in %s; the client starts the server when it chooses", s.Start, c.format)
		}
	}
	return e
}

func (c *compiler) usedInputs() []any {
	var out []any
	for _, in := range c.cfg.Inputs {
		if !c.inputs[in.ID] || c.format == FormatMCPServers {
			continue
		}
		e := map[string]any{"type": in.Type, "id": in.ID}
		if in.Description != "" {
			e["description"] = in.Description
		}
		if in.Password {
			e["password"] = true
		}
		if in.Default != "" {
			e["default"] = in.Default
		}
		out = append(out, e)
	}
	return out
}

// nexusExtras writes what only Nexus reads: roots, plugins, filters, agents.
func (c *compiler) nexusExtras(doc map[string]any) {
	cfg := c.cfg
	if len(cfg.Roots) > 0 {
		doc["nexus"] = map[string]any{"roots": cfg.Roots}
	}
	if len(cfg.Plugins) > 0 {
		doc["plugins"] = pluginBlock.outAll(c, cfg.Plugins)
	}
	if len(cfg.Filters) > 0 {
		doc["filters"] = filterBlock.outAll(c, cfg.Filters)
	}
	if len(cfg.Agents) > 0 {
		doc["agents"] = agentBlock.outAll(c, cfg.Agents)
	}
	if cfg.Gateway != nil {
		c.cur = "gateway" // what a masked session_store is reported under
		doc["gateway"] = gatewayBlock.out(c, cfg.Gateway)
		c.cur = ""
	}
	if cfg.Sampling != nil {
		doc["sampling"] = samplingBlock.out(c, cfg.Sampling)
	}
	if cfg.Lock != nil {
		doc["lock"] = lockBlock.out(c, cfg.Lock)
	}
	if cfg.Telemetry != nil {
		doc["telemetry"] = telemetryBlock.out(c, cfg.Telemetry)
	}
	if cfg.Audit != nil {
		doc["audit"] = auditBlock.out(c, cfg.Audit)
	}
}

func putList(m map[string]any, k string, v []string) {
	if v != nil {
		m[k] = v
	}
}

// lostGlobals warns about what only Nexus has.
func (c *compiler) lostGlobals() {
	names := func(n int, name func(int) string) string {
		out := make([]string, n)
		for i := range out {
			out[i] = name(i)
		}
		return strings.Join(out, ", ")
	}
	cfg := c.cfg
	if n := len(cfg.Filters); n > 0 {
		c.warns = append(c.warns, Warning{Message: fmt.Sprintf("%d filter(s) (%s) cannot be expressed in %s: the client will call the servers without them",
			n, names(n, func(i int) string { return cfg.Filters[i].Name }), c.format)})
	}
	if n := len(cfg.Agents); n > 0 {
		c.warns = append(c.warns, Warning{Message: fmt.Sprintf("%d agent(s) (%s) and their permissions cannot be expressed in %s",
			n, names(n, func(i int) string { return cfg.Agents[i].Name }), c.format)})
	}
	if n := len(cfg.Plugins); n > 0 {
		c.warns = append(c.warns, Warning{Message: fmt.Sprintf("%d plugin(s) (%s) cannot be expressed in %s",
			n, names(n, func(i int) string { return cfg.Plugins[i].Name }), c.format)})
	}
	if len(cfg.Roots) > 0 {
		c.warns = append(c.warns, Warning{Message: fmt.Sprintf("roots %v cannot be expressed in %s", cfg.Roots, c.format)})
	}
	if cfg.Gateway != nil {
		c.warns = append(c.warns, Warning{Source: cfg.Gateway.Source, Message: fmt.Sprintf("the gateway block cannot be expressed in %s (it configures nexus serve; --via-gateway writes a client config that uses it)", c.format)})
	}
	if cfg.Lock != nil {
		c.warns = append(c.warns, Warning{Source: cfg.Lock.Source, Message: fmt.Sprintf("the lock block cannot be expressed in %s: a client does not read nexus.lock.hcl", c.format)})
	}
	if cfg.Telemetry != nil {
		c.warns = append(c.warns, Warning{Source: cfg.Telemetry.Source, Message: fmt.Sprintf("the telemetry block cannot be expressed in %s: the client does not trace through Nexus", c.format)})
	}
	if cfg.Audit != nil {
		c.warns = append(c.warns, Warning{Source: cfg.Audit.Source, Message: fmt.Sprintf("the audit block cannot be expressed in %s: only Nexus keeps an audit log", c.format)})
	}
	if cfg.Sampling != nil {
		c.warns = append(c.warns, Warning{Source: cfg.Sampling.Source, Message: fmt.Sprintf("the sampling block cannot be expressed in %s: the client answers sampling requests with its own model", c.format)})
	}
	var prefixed []string
	for _, s := range cfg.Servers {
		if s.Prefix != nil {
			prefixed = append(prefixed, s.Name)
		}
	}
	if len(prefixed) > 0 {
		c.warns = append(c.warns, Warning{Message: fmt.Sprintf("the name prefixes of %s cannot be expressed in %s: the client names the tools itself", strings.Join(prefixed, ", "), c.format)})
	}
}

// refWarnings says which variables the output needs from the client's
// environment, and where that will not work.
func (c *compiler) refWarnings() {
	if c.dollar {
		c.warns = append(c.warns, Warning{Message: "a value holds a literal ${, which the client may try to expand"})
	}
	if len(c.envs) == 0 {
		return
	}
	names := sortedKeys(c.envs)
	msg := "environment values and secrets are written as references, not copied: set " + strings.Join(names, ", ") + " in the environment the client runs in"
	if c.format == FormatMCPServers {
		msg += " (Claude Code expands ${NAME}; Claude Desktop does not expand variables at all)"
	}
	c.warns = append(c.warns, Warning{Message: msg})
}
