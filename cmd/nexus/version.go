package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
)

// versionText is what nexus version and --version print: the release, the
// commit it was built from (with "+dirty" for uncommitted changes) and
// the Go toolchain, as a bug report needs them.
func versionText() string {
	commit := "unknown commit"
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if rev != "" {
			commit = "commit " + rev[:min(12, len(rev))] + dirty
		}
	}
	return fmt.Sprintf("nexus %s (%s, %s, %s/%s)", host.Version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit it was built from and the Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.output == "json" {
				a.printJSON(map[string]string{"version": host.Version, "text": versionText(), "go": runtime.Version()})
				return nil
			}
			fmt.Fprintln(a.stdout, versionText())
			return nil
		},
	}
}
