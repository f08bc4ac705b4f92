package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
)

func (a *app) lockCmd() *cobra.Command {
	var (
		path, server         string
		check, acceptFlagged bool
	)
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Pin every server's tool, prompt and template definitions in nexus.lock.hcl; --check compares",
		Long: `Connect every configured server and write nexus.lock.hcl beside the first config
file (or --lockfile PATH): per server its serverInfo, and per tool, prompt and
resource template the sha256 of its canonical definition (RFC 8785) and its
description. Commit the file and review changes to it as code: a changed
description or schema is a rug pull until someone has read it.

--server NAME updates that server alone. --check writes nothing: it exits 0
when the servers offer what the lockfile pins and 1 with the differences
(added, removed, changed, with the old and new descriptions) when they do
not, for CI; -o json for machines.

A tool that the chain's tools/list policies flag (filters/tool-poisoning
finding hidden instructions, say) is not pinned: nexus lock keeps its
previous pin, if any, and exits 1 naming each finding. After review,
--accept-flagged pins it anyway and writes the findings beside it, so
reviewers see them, later runs accept the same definition again, and the
policy that flagged it lets that very definition through (a changed one
is withheld again).`,
		Example: `  nexus lock
  nexus lock --check
  nexus lock --server github      # accept github's new definitions after review
  nexus lock --accept-flagged     # pin flagged tools too, with their findings`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.noLock = true
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			if path == "" {
				path = host.LockPath(a.cfg)
			}
			pinned, err := host.ReadLockFile(path)
			unreadable := false
			switch {
			case err != nil && check:
				return &exitError{exitUsage, err}
			case err != nil:
				fmt.Fprintf(a.stderr, "Warning: the lockfile cannot be read, so it is written anew from the servers (review the whole diff):\n%v\n", err)
				pinned, unreadable = nil, true
			}
			if names := h.Config().Names(); server != "" && !slices.Contains(names, server) {
				return usageErr("server %q is not configured (configured: %s)", server, strings.Join(names, ", "))
			}
			r, err := h.Relock(cmd.Context(), host.LockOptions{Agent: a.agent, Path: path, Pinned: pinned, Anew: unreadable,
				Server: server, Check: check, AcceptFlagged: acceptFlagged})
			if err != nil {
				return err
			}
			changes := r.Changes
			if check {
				if a.output == "json" {
					a.printJSON(struct {
						Lockfile string            `json:"lockfile"`
						Changes  []host.LockChange `json:"changes"`
					}{path, changes})
				} else if len(changes) == 0 {
					fmt.Fprintf(a.stdout, "The servers offer what %s pins.\n", path)
				} else {
					fmt.Fprintf(a.stdout, "The servers differ from %s:\n", path)
					for _, c := range changes {
						fmt.Fprintln(a.stdout, "  "+clean(c.String()))
					}
					fmt.Fprintln(a.stdout, "Review them, then accept with nexus lock (or nexus lock --server NAME).")
				}
				if len(changes) > 0 {
					return &exitError{exitToolError, fmt.Errorf("%d difference(s) from %s", len(changes), path)}
				}
				return nil
			}
			refused := r.Flagged
			fmt.Fprintf(a.stdout, "Wrote %s: %s, %d change(s).\n", path, count(r.Servers, "server"), len(changes)-len(refused))
			if len(refused) > 0 {
				fmt.Fprintf(a.stdout, "Not pinned, as flagged (a previous pin, if any, is kept):\n")
				for _, c := range refused {
					fmt.Fprintln(a.stdout, "  "+clean(c.String()))
				}
				fmt.Fprintln(a.stdout, "Review them; if they are safe, pin them with nexus lock --accept-flagged, which writes the findings beside them.")
				return &exitError{exitToolError, fmt.Errorf("%s not pinned as flagged", count(len(refused), "tool"))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "lockfile", "", "the lockfile (default: nexus.lock.hcl beside the first config file)")
	cmd.Flags().StringVar(&server, "server", "", "update this server only")
	cmd.Flags().BoolVar(&check, "check", false, "compare, write nothing; exit 1 on any difference")
	cmd.Flags().BoolVar(&acceptFlagged, "accept-flagged", false, "pin tools the chain's tools/list policies flag, with their findings")
	return cmd
}

// readLock reads cfg's lockfile for enforcement: none is nil; a broken one
// stops the command, since running unpinned would be silent. Entries of
// servers the config no longer has are said (nexus lock drops them).
func (a *app) readLock(cfg *host.Config) (*host.Lock, error) {
	l, err := host.ReadLock(cfg)
	if err != nil {
		return nil, &exitError{exitUsage, err}
	}
	if l != nil {
		for _, s := range l.Servers() {
			if cfg.Server(s) == nil {
				fmt.Fprintf(a.stderr, "Warning: %s pins server %q, which is not configured; nexus lock drops it\n", host.LockPath(cfg), s)
			}
		}
	}
	return l, nil
}
