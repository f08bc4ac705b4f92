package config

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// ToHCL writes the servers of cfg (a client's config, say: Claude Desktop,
// Claude Code, Cursor, VS Code) as a nexus.hcl that loads back to the same
// servers. A value that came from the environment is read from it there
// too (env("NAME"), with its default); a VS Code input becomes a sensitive
// variable read from its NEXUS_INPUT_ variable. What the file holds
// besides servers and inputs (plugins, filters, agents, a gateway) is not
// written: the warnings say so.
func ToHCL(cfg *Config, from string) ([]byte, []string) {
	var b bytes.Buffer
	var warns []string
	fmt.Fprintf(&b, "# Converted from %s by nexus config init --from.\n", from)
	b.WriteString("# Values that came from the environment are read from it here too.\n")
	inputs := slices.Clone(cfg.Inputs)
	slices.SortFunc(inputs, func(x, y Input) int { return strings.Compare(x.ID, y.ID) })
	for _, in := range inputs {
		fmt.Fprintf(&b, "\nvariable %s {\n  sensitive = true\n  env       = %s\n", hclString(inputVar(in.ID)), hclString(in.EnvName()))
		if in.Description != "" {
			fmt.Fprintf(&b, "  description = %s\n", hclString(in.Description))
		}
		b.WriteString("}\n")
	}
	for _, s := range cfg.Servers {
		b.WriteString(serverHCL(s))
	}
	if n := len(cfg.Plugins) + len(cfg.Filters) + len(cfg.Agents); n > 0 || cfg.Gateway != nil {
		warns = append(warns, fmt.Sprintf("%s also defines plugins, filters, agents or a gateway; only its servers were converted (nexus config compile --format nexus-json shows all of it)", from))
	}
	out := hclwrite.Format(b.Bytes())
	return out, warns
}

func serverHCL(s *Server) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nserver %s {\n", hclString(s.Name))
	if !s.Enabled {
		b.WriteString("  enabled = false\n")
	}
	if s.Timeout > 0 {
		fmt.Fprintf(&b, "  timeout = %s\n", hclString(s.Timeout.String()))
	}
	if s.Prefix != nil {
		fmt.Fprintf(&b, "  prefix = %s\n", hclString(*s.Prefix))
	}
	if s.Confirm != "" {
		fmt.Fprintf(&b, "  confirm = %s\n", hclString(s.Confirm))
	}
	if s.Start != "" {
		fmt.Fprintf(&b, "  start = %s\n", hclString(s.Start))
	}
	val := func(ptr, v string) string { return s.valueHCL(ptr, v) }
	switch {
	case len(s.Command) > 0:
		b.WriteString("  stdio {\n")
		fmt.Fprintf(&b, "    command = %s\n", val("/command/0", s.Command[0]))
		if len(s.Command) > 1 {
			args := make([]string, len(s.Command)-1)
			for i, a := range s.Command[1:] {
				args[i] = val(pointer("/command", i+1), a)
			}
			fmt.Fprintf(&b, "    args = [%s]\n", strings.Join(args, ", "))
		}
		hclOptions(&b, s, stdioOptions, &s.Stdio)
		b.WriteString("  }\n")
	case s.URL != "":
		b.WriteString("  http {\n")
		fmt.Fprintf(&b, "    url = %s\n", val("/url", s.URL))
		if s.Type == TypeSSE || s.LegacySSE {
			b.WriteString("    legacy_sse = true\n")
		}
		hclOptions(&b, s, httpOptions, &s.HTTP)
		b.WriteString("  }\n")
		if s.OAuth != nil {
			b.WriteString("  oauth {\n")
			hclOptions(&b, s, oauthOptions, s.OAuth)
			b.WriteString("  }\n")
		}
	case s.Plugin != nil:
		fmt.Fprintf(&b, "  plugin {\n    name = %s\n  }\n", hclString(s.Plugin.Name))
	}
	b.WriteString("}\n")
	return b.String()
}

// valueHCL is a string setting: its template where it came from the
// environment or an input (a reference alone is the expression itself),
// else the value.
func (s *Server) valueHCL(ptr, v string) string {
	t, ok := s.Refs[ptr]
	if !ok {
		return hclString(v)
	}
	if len(t) == 1 && t[0].Ref != nil {
		return refHCL(*t[0].Ref)
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, p := range t {
		if p.Ref == nil {
			q := hclString(p.Text)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteString("${" + refHCL(*p.Ref) + "}")
		}
	}
	b.WriteByte('"')
	return b.String()
}

// refHCL is the HCL expression that reads what r refers to.
func refHCL(r Ref) string {
	switch {
	case r.Input != "":
		return "var." + inputVar(r.Input)
	case r.HasDefault:
		return fmt.Sprintf("env(%s, %s)", hclString(r.Env), hclString(r.Default))
	}
	return fmt.Sprintf("env(%s)", hclString(r.Env))
}

func (s *Server) mapHCL(ptr string, m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("{\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "      %s = %s\n", hclString(k), s.valueHCL(pointer(ptr, k), m[k]))
	}
	b.WriteString("    }")
	return b.String()
}

// inputVar is the HCL variable an input becomes.
func inputVar(id string) string { return strings.ToLower(envSafe(id)) }

// hclString is s as an HCL quoted string, with ${ and %{ escaped.
func hclString(s string) string {
	return string(hclwrite.TokensForValue(cty.StringVal(s)).Bytes())
}

func hclStrings(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = hclString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
