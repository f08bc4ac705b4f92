package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
)

func (a *app) serversCmd() *cobra.Command {
	var connect bool
	cmd := &cobra.Command{
		Use:   "servers",
		Short: "List configured servers with origin and transport (--connect: status, versions, capabilities, counts)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			if connect {
				h.Start(cmd.Context())
			}
			type row struct {
				Name      string   `json:"name"`
				Transport string   `json:"transport"`
				Enabled   bool     `json:"enabled"`
				Origin    string   `json:"origin"`
				Target    string   `json:"target"`
				Status    string   `json:"status,omitempty"`
				Server    string   `json:"server,omitempty"`
				Protocol  string   `json:"protocol,omitempty"`
				Era       string   `json:"era,omitempty"`
				Caps      []string `json:"capabilities,omitempty"`
				Tools     *int     `json:"tools,omitempty"`
				Error     string   `json:"error,omitempty"`
			}
			var rows []row
			for _, s := range h.Servers() {
				c := s.Config
				r := row{Name: c.Name, Transport: c.Type, Enabled: c.Enabled, Origin: c.Source.String(), Target: target(s)}
				if connect && c.Enabled {
					switch {
					case s.Connected:
						r.Status = "connected"
						r.Server = s.Info.Name + " " + s.Info.Version
						r.Protocol = s.Version
						r.Era = s.Era
						r.Caps = caps(s)
						n := s.Tools
						r.Tools = &n
						if s.ToolsErr != nil {
							r.Error = "tools/list failed: " + firstLine(s.ToolsErr.Error())
						}
					case s.Err != nil:
						r.Status = "failed"
						r.Error = firstLine(s.Err.Error())
					}
				}
				rows = append(rows, r)
			}
			if a.output == "json" {
				a.printJSON(rows)
				return nil
			}
			var lines [][2]string
			for _, r := range rows {
				state := r.Transport
				if !r.Enabled {
					state += ", disabled"
				}
				right := fmt.Sprintf("%-9s %s  (%s)", state, r.Target, r.Origin)
				if r.Status == "connected" {
					right += fmt.Sprintf("\n    connected: %s, protocol %s (%s), %d tools, %s", r.Server, r.Protocol, r.Era, *r.Tools, strings.Join(r.Caps, " "))
				}
				if r.Error != "" {
					right += "\n    " + r.Status + ": " + r.Error
				}
				lines = append(lines, [2]string{r.Name, right})
			}
			a.printTable(lines)
			return nil
		},
	}
	cmd.Flags().BoolVar(&connect, "connect", false, "connect to each enabled server and show its status")
	return cmd
}

func target(s host.Status) string {
	c := s.Config
	switch {
	case len(c.Command) > 0:
		return strings.Join(host.MaskCommand(c.Command), " ")
	case c.URL != "":
		return host.MaskURLs(c.URL)
	case c.Plugin != "":
		return "plugin " + c.Plugin
	}
	return ""
}

func caps(s host.Status) []string {
	var out []string
	if s.Caps.Tools != nil {
		out = append(out, "tools")
	}
	if s.Caps.Resources != nil {
		out = append(out, "resources")
	}
	if s.Caps.Prompts != nil {
		out = append(out, "prompts")
	}
	if s.Caps.Logging != nil {
		out = append(out, "logging")
	}
	if s.Caps.Completions != nil {
		out = append(out, "completions")
	}
	return out
}
