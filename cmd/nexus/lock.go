package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host/config"
	"github.com/nexus-mcp/nexus/host/lock"
)

func (a *app) lockCmd() *cobra.Command {
	var (
		path, server string
		check        bool
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
not, for CI; -o json for machines.`,
		Example: `  nexus lock
  nexus lock --check
  nexus lock --server github      # accept github's new definitions after review`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.noLock = true
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			if path == "" {
				path = lockPath(a.cfg)
			}
			pinned, err := lock.Read(path)
			switch {
			case err != nil && check:
				return &exitError{exitUsage, err}
			case err != nil:
				fmt.Fprintf(a.stderr, "Warning: the lockfile cannot be read, so it is written anew from the servers (review the whole diff):\n%v\n", err)
				pinned = nil
			}
			if pinned == nil {
				pinned = &lock.Lock{}
			}
			names := h.Config().Names()
			if server != "" {
				if !slices.Contains(names, server) {
					return usageErr("server %q is not configured (configured: %s)", server, strings.Join(names, ", "))
				}
				names = []string{server}
			}
			var changes []lock.Change
			next := &lock.Lock{}
			if server != "" {
				next.Servers = slices.Clone(pinned.Servers) // the others stay as pinned
			}
			for _, name := range names {
				if s := h.Config().Server(name); s == nil || !s.Enabled {
					continue
				}
				d, err := h.Definitions(cmd.Context(), a.agent, name)
				if err != nil {
					return err
				}
				live, err := lock.Pin(name, d.Info, d.Tools, d.Prompts, d.Templates)
				if err != nil {
					return fmt.Errorf("server %q: %w", name, err)
				}
				changes = append(changes, lock.Diff(pinned.Server(name), live)...)
				next.Put(live)
			}
			if check {
				if a.output == "json" {
					a.printJSON(struct {
						Lockfile string        `json:"lockfile"`
						Changes  []lock.Change `json:"changes"`
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
			if err := os.WriteFile(path, next.Write(), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Wrote %s: %s, %d change(s).\n", path, count(len(next.Servers), "server"), len(changes))
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "lockfile", "", "the lockfile (default: nexus.lock.hcl beside the first config file)")
	cmd.Flags().StringVar(&server, "server", "", "update this server only")
	cmd.Flags().BoolVar(&check, "check", false, "compare, write nothing; exit 1 on any difference")
	return cmd
}

// lockPath is where the lockfile of cfg is: nexus.lock.hcl beside its
// first config file (the working directory for the built-in default).
func lockPath(cfg *config.Config) string {
	if len(cfg.Files) > 0 && cfg.Files[0].Path != "" {
		return filepath.Join(filepath.Dir(cfg.Files[0].Path), lock.FileName)
	}
	return lock.FileName
}

// readLock reads cfg's lockfile for enforcement: none is nil; a broken one
// stops the command, since running unpinned would be silent. Entries of
// servers the config no longer has are said (nexus lock drops them).
func (a *app) readLock(cfg *config.Config) (*lock.Lock, error) {
	path := lockPath(cfg)
	l, err := lock.Read(path)
	if err != nil {
		return nil, &exitError{exitUsage, err}
	}
	if l != nil {
		for _, s := range l.Servers {
			if cfg.Server(s.Name) == nil {
				fmt.Fprintf(a.stderr, "Warning: %s pins server %q, which is not configured; nexus lock drops it\n", path, s.Name)
			}
		}
	}
	return l, nil
}
