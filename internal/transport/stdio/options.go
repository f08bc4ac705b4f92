package stdio

import (
	"fmt"
	"maps"

	"github.com/nexus-mcp/nexus/internal/option"
)

// Options are the transport's settings a config gives: the stdio block of
// a nexus.hcl server, or members of a JSON server entry. OptionTable decodes
// and writes them; the command and its arguments, which also choose the
// transport and are spelled differently by every client's format, are read
// by the config loader beside them.
type Options struct {
	Env            map[string]string // explicit values, win over everything
	EnvFile        string            // absolute path of a KEY=value file (Cursor's envFile)
	FileEnv        map[string]string // what EnvFile held when the config was loaded
	EnvPassthrough []string          // host variables to pass through in addition to SafeEnvKeys
	Cwd            string            // absolute working directory; "" = the host's
}

// Environ is the environment the options set: EnvFile's values, overridden
// by Env.
func (o *Options) Environ() map[string]string {
	if len(o.FileEnv) == 0 {
		return o.Env
	}
	out := maps.Clone(o.FileEnv)
	maps.Copy(out, o.Env)
	return out
}

// OptionTable is every option of Options, in the order nexus.hcl writes
// them. To add one: a field above, a row here, its use in Start.
var OptionTable = option.Table[Options]{
	option.Map("env", "/env", func(o *Options) *map[string]string { return &o.Env }, `{"MODE": "ro"}`),
	{HCL: "env_passthrough", JSON: "env_passthrough", Example: `["LANG"]`,
		Decode: func(o *Options, v option.Value) { o.EnvPassthrough, _ = v.Strings("") },
		Out: func(o *Options, _ option.Writer) any {
			if len(o.EnvPassthrough) == 0 {
				return nil
			}
			return o.EnvPassthrough
		},
		Lost: func(o *Options, _ string) string {
			if len(o.EnvPassthrough) == 0 {
				return ""
			}
			return fmt.Sprintf("env_passthrough %v cannot be expressed; the client decides which of its variables the server sees (add them to \"env\" as ${NAME} references to pass them explicitly)", o.EnvPassthrough)
		}},
	{HCL: "env_file", JSON: "envFile", Example: `"vars.env"`,
		Decode: func(o *Options, v option.Value) {
			if p, ok := v.Path("/envFile"); ok && p != "" {
				o.EnvFile = p
				o.FileEnv, _ = v.EnvFile(p)
			}
		},
		Out: func(o *Options, w option.Writer) any {
			if o.EnvFile == "" {
				return nil
			}
			return w.Path("/envFile", o.EnvFile)
		},
		// Cursor and VS Code have envFile; Claude's mcpServers has not.
		Lost: func(o *Options, format string) string {
			if o.EnvFile == "" || format != "mcpservers" {
				return ""
			}
			return fmt.Sprintf("envFile %s cannot be expressed for Claude; set its variables in \"env\" (as ${NAME} references) instead", o.EnvFile)
		}},
	{HCL: "cwd", JSON: "cwd", Example: `"work"`,
		Decode: func(o *Options, v option.Value) { o.Cwd, _ = v.Path("/cwd") },
		Out: func(o *Options, w option.Writer) any {
			if o.Cwd == "" {
				return nil
			}
			return w.Path("/cwd", o.Cwd)
		},
		Lost: func(o *Options, format string) string {
			if o.Cwd == "" {
				return ""
			}
			return fmt.Sprintf("cwd %s cannot be expressed in %s; the server starts in the client's working directory", o.Cwd, format)
		}},
}
