package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
)

// pluginCmd is `nexus plugin`: tools for go-plugin binaries.
func (a *app) pluginCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Inspect go-plugin binaries (transports, policies, sanitizers)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErr("nexus plugin needs a verb: inspect")
		},
	}
	cmd.AddCommand(a.pluginInspectCmd())
	return cmd
}

func (a *app) pluginInspectCmd() *cobra.Command {
	var sum string
	cmd := &cobra.Command{
		Use:   "inspect PATH",
		Short: "Print the kinds, protocol versions and config schemas a plugin binary offers",
		Long: `Print the kinds, protocol versions and config schemas a plugin binary offers,
and the plugin block that pins it.

The binary runs (it is asked over the plugin protocol), so inspect only
binaries you trust. --sha256 checks it first, as a plugin block would.`,
		Example: `  nexus plugin inspect bin/plugins/policy-ratelimit
  nexus plugin inspect bin/plugins/transport-websocket -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := filepath.Abs(args[0])
			if err != nil {
				return usageErr("%v", err)
			}
			info, err := host.InspectPlugin(cmd.Context(), path, host.InspectOptions{StartTimeout: a.timeout, SHA256: sum})
			if err != nil {
				return err
			}
			if a.output == "json" {
				return a.printInspectJSON(info)
			}
			a.printInspect(info)
			return nil
		},
	}
	cmd.Flags().StringVar(&sum, "sha256", "", "expected sha256 of the binary; it is not run if it differs")
	return cmd
}

func (a *app) printInspectJSON(info host.PluginInfo) error {
	out := map[string]any{
		"path":              info.Path,
		"sha256":            info.SHA256,
		"name":              info.Name,
		"version":           info.Version,
		"kinds":             info.Kinds,
		"protocol_version":  info.ProtocolVersion,
		"protocol_versions": info.ProtocolVersions,
		"event_abi":         info.EventABI,
		"config_schemas":    info.Schemas,
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	a.printText(string(b))
	return nil
}

func (a *app) printInspect(info host.PluginInfo) {
	var b strings.Builder
	title := info.Name
	if title == "" {
		title = filepath.Base(info.Path)
	}
	if info.Version != "" {
		title += " " + info.Version
	}
	fmt.Fprintf(&b, "Plugin: %s\n", title)
	fmt.Fprintf(&b, "Path: %s\n", info.Path)
	fmt.Fprintf(&b, "SHA256: %s\n", info.SHA256)
	fmt.Fprintf(&b, "Kinds: %s\n", strings.Join(info.Kinds, ", "))
	vs := make([]string, len(info.ProtocolVersions))
	for i, v := range info.ProtocolVersions {
		vs[i] = strconv.Itoa(v)
	}
	fmt.Fprintf(&b, "Protocol versions: %s (this host uses %d)\n", strings.Join(vs, ", "), info.ProtocolVersion)
	fmt.Fprintf(&b, "Event ABI: %d\n", info.EventABI)
	for _, kind := range info.Kinds {
		schema, ok := info.Schemas[kind]
		if !ok {
			fmt.Fprintf(&b, "\nConfig schema (%s): none (any config is accepted)\n", kind)
			continue
		}
		var pretty bytes.Buffer
		if json.Indent(&pretty, schema, "  ", "  ") != nil {
			pretty.Reset()
			pretty.Write(schema)
		}
		fmt.Fprintf(&b, "\nConfig schema (%s):\n  %s\n", kind, pretty.String())
	}
	name := info.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(info.Path), filepath.Ext(info.Path))
	}
	fmt.Fprintf(&b, "\nPin it in nexus.hcl:\n  plugin %q {\n    path   = %q\n    sha256 = %q\n  }\n", name, info.Path, info.SHA256)
	a.printText(b.String())
}
