package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
)

// approvalsPath is where the command line remembers "always" answers:
// $NEXUS_APPROVALS, else ~/.nexus/approvals.json ("" without a home).
func approvalsPath() string {
	if p := os.Getenv("NEXUS_APPROVALS"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".nexus", "approvals.json")
}

// approvals opens the remembered approvals for cfg's servers; a file that
// cannot be used is said once and approvals last this process only.
func (a *app) approvals(cfg *host.Config) host.Approvals {
	path := approvalsPath()
	if path == "" {
		return nil
	}
	store, err := host.OpenApprovals(path, cfg)
	if err != nil {
		fmt.Fprintf(a.stderr, "Warning: %v; \"always\" answers last this process only\n", err)
		return nil
	}
	return store
}

func (a *app) approvalsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List the servers and tools you approved \"always\" for an agent; revoke them",
		Long: `List the remembered "always" answers to confirmation questions: by agent and
server, or by tool where you chose "this tool always". They are kept in
~/.nexus/approvals.json ($NEXUS_APPROVALS), and apply only while the server
is what it was when approved: a changed command, arguments, working
directory, URL or transport plugin is asked about again ("stale" below).`,
		Example: `  nexus approvals
  nexus approvals revoke cli github
  nexus approvals revoke --all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := host.ReadApprovals(approvalsPath())
			if err != nil {
				return err
			}
			current := map[string]string{}
			if cfg, err := a.loadConfig(true); err == nil {
				current = host.Fingerprints(cfg)
			}
			type row struct {
				host.Approval
				Stale bool `json:"stale"`
			}
			rows := make([]row, len(list))
			for i, ap := range list {
				rows[i] = row{ap, current[ap.Server] != ap.Fingerprint}
			}
			if a.output == "json" {
				a.printJSON(rows)
				return nil
			}
			if len(rows) == 0 {
				fmt.Fprintln(a.stdout, "No approvals are remembered; answer \"always\" at a confirmation to add one.")
				return nil
			}
			var lines [][2]string
			for _, r := range rows {
				what := r.Server + " (every use)"
				if r.Tool != "" {
					what = r.Server + "." + r.Tool
				}
				note := "approved " + r.Granted.Format("2006-01-02 15:04 MST")
				if r.Stale {
					note += ", stale: the server changed or is not configured here"
				}
				lines = append(lines, [2]string{"agent " + r.Agent + "  " + what, note})
			}
			a.printTable(lines)
			return nil
		},
	}
	cmd.AddCommand(a.approvalsRevokeCmd())
	return cmd
}

func (a *app) approvalsRevokeCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "revoke [AGENT SERVER [TOOL]]",
		Short: "Forget approvals: an agent's of a server (or of one tool), or --all",
		Args: func(cmd *cobra.Command, args []string) error {
			if all != (len(args) == 0) || len(args) == 1 || len(args) > 3 {
				return usageErr("give AGENT SERVER [TOOL], or --all")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			path := approvalsPath()
			list, err := host.ReadApprovals(path)
			if err != nil && !all {
				return err
			}
			before := len(list)
			if all {
				list = nil
			} else {
				tool := ""
				if len(args) == 3 {
					tool = args[2]
				}
				list = slices.DeleteFunc(list, func(x host.Approval) bool {
					// Revoking a server takes its tools' approvals too.
					return x.Agent == args[0] && x.Server == args[1] && (tool == "" || x.Tool == tool)
				})
			}
			if len(list) == before && !all {
				return usageErr("no approval of %s for agent %q is remembered (nexus approvals lists them)", serverTool(args), args[0])
			}
			if err := host.WriteApprovals(path, list); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Revoked %d approval(s).\n", before-len(list))
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "forget every approval")
	return cmd
}

func serverTool(args []string) string {
	if len(args) == 3 {
		return args[1] + "." + args[2]
	}
	return "server " + args[1]
}
