package explain

import (
	"strconv"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/plugin"
)

// pluginCrash is the report on a plugin process that exited while the
// host used it.
func pluginCrash(e *plugin.CrashError) *diag.Report {
	r := &diag.Report{
		Title:   "Plugin Crashed",
		Problem: "Plugin " + strconv.Quote(e.Plugin) + " exited",
		Cause:   e,
	}
	if e.During != "" {
		r.Problem += " during " + e.During
	}
	if e.Exit != "" {
		r.Problem += " (" + e.Exit + ")"
	}
	r.Details = []diag.Section{pluginStderr(e.Stderr)}
	r.Causes = []string{"A bug in the plugin; its stderr above usually shows the panic or error"}
	r.Fix = []string{"The host restarts the plugin with backoff; calls succeed again once it is back",
		"Run with --log-level debug to see everything the plugin logs"}
	return r
}

// pluginConfig is the report on a config block that fails its plugin's
// schema, with the config file and line.
func pluginConfig(e *plugin.ConfigError) *diag.Report {
	at := e.Pointer
	if at == "" {
		at = "the config"
	}
	return &diag.Report{
		Title:   "Plugin Config Invalid",
		Source:  e.Source,
		Problem: "The " + e.Kind + " config of " + e.User + " does not match the schema of plugin " + strconv.Quote(e.Plugin),
		Details: []diag.Section{{Heading: "Schema errors (at " + at + ")", Lines: e.Problems}},
		Fix: []string{"Fix the config block at the source above",
			"`nexus plugin inspect PATH` prints the plugin's config schema"},
		Cause: e,
	}
}

// pluginUnknown is the report on a server or filter that names a plugin
// no plugin block defines.
func pluginUnknown(e *plugin.UnknownError) *diag.Report {
	r := &diag.Report{Title: "Unknown Plugin", Source: e.Source, Problem: e.Error(), Cause: e,
		Fix: []string{"Add plugin \"" + e.Plugin + "\" { path = \"...\" sha256 = \"...\" } or fix the name"}}
	if e.Filter == "" {
		r.Server = e.Server
	}
	return r
}

// pluginNotChecked is the report on a plugin that could not be started to
// check its configs, for a cause with no report of its own.
func pluginNotChecked(e *plugin.CheckError) *diag.Report {
	return &diag.Report{Title: "Plugin Config Not Checked", Source: e.Source, Cause: e, Problem: e.Error(),
		Fix: []string{"Build the plugin (make plugins builds the first-party ones) and pin its sha256 in the plugin block"}}
}

// pluginStderr is a plugin's stderr tail as evidence: its last ten lines.
func pluginStderr(lines []string) diag.Section {
	if len(lines) == 0 {
		return diag.Section{Heading: "Plugin stderr", Lines: []string{"(empty)"}}
	}
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return diag.Section{Heading: "Plugin stderr (last lines)", Lines: lines}
}

// pluginLoad is the report on a plugin that could not be launched: what
// to do about it, by kind.
func pluginLoad(e *plugin.LoadError) *diag.Report {
	r := &diag.Report{Title: "Plugin Launch Failed", Source: e.Source, Cause: e}
	r.Command = []string{e.Path}
	name := strconv.Quote(e.Plugin)
	switch e.Kind {
	case plugin.LoadNotFound:
		r.Problem = "Plugin " + name + ": no file at " + e.Path
		r.Causes = []string{"The path is wrong, or the plugin was not built or installed yet"}
		r.Fix = []string{"Build the plugin (make plugins builds the first-party ones) or fix path in the plugin block"}
	case plugin.LoadNotExecutable:
		r.Problem = "Plugin " + name + ": " + e.Path + " is not an executable file"
		r.Causes = []string{"The file lacks execute permission, or the path names a directory"}
		r.Fix = []string{"chmod +x " + e.Path}
	case plugin.LoadChecksumMissing:
		r.Problem = "Plugin " + name + " has no sha256 in its plugin block; Nexus runs only plugins whose checksum is pinned"
		r.Causes = []string{"The plugin block was written without a checksum"}
		r.Fix = []string{"If you trust this binary, pin it: sha256 = \"" + e.Sum + "\"",
			"For local development only, the host can be told to skip the check (insecure_skip_checksum)"}
	case plugin.LoadChecksumMismatch:
		r.Problem = "Plugin " + name + ": the binary's sha256 does not match the one pinned in config; it was not run"
		r.Details = []diag.Section{{Heading: "Checksums", Lines: []string{"pinned: " + e.Pinned, "actual: " + e.Sum}}}
		r.Causes = []string{"The plugin was rebuilt or upgraded since the checksum was pinned", "The binary was replaced by someone else"}
		r.Fix = []string{"If you built or installed the new binary yourself, update the pin: sha256 = \"" + e.Sum + "\""}
	case plugin.LoadNotAPlugin:
		r.Problem = "Plugin " + name + ": " + e.Path + " is not a Nexus plugin (it did not answer the plugin handshake)"
		if e.Err != nil {
			r.Details = append(r.Details, diag.Section{Heading: "Handshake", Lines: []string{e.Err.Error()}})
		}
		r.Causes = []string{"The path names another program, or a plugin built for another host",
			"The plugin prints to stdout before calling plugin.Serve (stdout carries the handshake)"}
		r.Fix = []string{"Point path at a binary built with github.com/nexus-mcp/nexus/sdk/plugin",
			"A plugin in another language prints the handshake line first and nothing else on stdout (sdk/plugin/proto/README.md)"}
	case plugin.LoadVersion:
		r.Problem = "Plugin " + name + " speaks no protocol version this host supports"
		if e.Err != nil {
			r.Details = append(r.Details, diag.Section{Heading: "Handshake", Lines: []string{e.Err.Error()}})
		}
		r.Causes = []string{"The plugin was built with an SDK newer or older than this host"}
		r.Fix = []string{"Rebuild the plugin against the SDK of this Nexus release, or upgrade Nexus"}
	case plugin.LoadTimeout:
		r.Problem = "Plugin " + name + " did not finish its handshake in time"
		r.Causes = []string{"The plugin hangs or does slow work before calling plugin.Serve"}
		r.Fix = []string{"Move slow setup out of main, into Open or NewPolicy"}
	case plugin.LoadExited:
		r.Problem = "Plugin " + name + " exited during start"
		r.Causes = []string{"The plugin failed before serving; its stderr usually says why",
			"The binary is not a Nexus plugin: it ran and exited without answering the plugin handshake"}
		r.Fix = []string{"Run the binary by hand to see its output"}
	case plugin.LoadBadPlugin:
		r.Problem = "Plugin " + name + " answered the go-plugin handshake but not the Nexus plugin protocol"
		if e.Err != nil {
			r.Problem += ": " + e.Err.Error()
		}
		r.Causes = []string{"The plugin was built with a modified or incompatible SDK",
			"A plugin in another language does not follow the contract, sdk/plugin/proto/plugin.proto"}
		r.Fix = []string{"Rebuild the plugin against github.com/nexus-mcp/nexus/sdk/plugin of this release",
			"Check a plugin in another language against sdk/plugin/proto/README.md"}
	case plugin.LoadReattach:
		r.Problem = "Plugin " + name + " is listed in NEXUS_REATTACH_PLUGINS but cannot be reached"
		r.Causes = []string{"The debug plugin process stopped, or the value is stale"}
		if e.Err != nil {
			r.Details = append(r.Details, diag.Section{Heading: "Error", Lines: []string{e.Err.Error()}})
		}
		r.Fix = []string{"Restart the plugin with -debug and export the value it prints, or unset NEXUS_REATTACH_PLUGINS"}
	default:
		r.Problem = "Plugin " + name + " could not be started"
		if e.Err != nil {
			r.Problem += ": " + e.Err.Error()
		}
	}
	if len(e.Stderr) > 0 || e.Kind == plugin.LoadExited || e.Kind == plugin.LoadNotAPlugin || e.Kind == plugin.LoadTimeout {
		r.Details = append(r.Details, pluginStderr(e.Stderr))
	}
	return r
}
