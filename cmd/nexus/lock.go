package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/policy"
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
			pinned, err := lock.Read(path)
			unreadable := false
			switch {
			case err != nil && check:
				return &exitError{exitUsage, err}
			case err != nil:
				fmt.Fprintf(a.stderr, "Warning: the lockfile cannot be read, so it is written anew from the servers (review the whole diff):\n%v\n", err)
				pinned, unreadable = nil, true
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
			var changes, refused []lock.Change
			next := &lock.Lock{}
			if server != "" {
				next.Servers = slices.Clone(pinned.Servers) // the others stay as pinned
			}
			defs := map[string]host.Definitions{}
			tools := map[string][]mcp.Tool{}
			for _, name := range names {
				if s := h.Config().Server(name); s == nil || !s.Enabled {
					continue
				}
				d, err := h.Definitions(cmd.Context(), a.agent, name)
				if err != nil {
					return err
				}
				defs[name], tools[name] = d, d.Tools
			}
			flagged, err := h.Review(cmd.Context(), a.agent, tools)
			if err != nil {
				return err
			}
			for _, name := range names {
				d, ok := defs[name]
				if !ok {
					continue
				}
				live, err := lock.Pin(name, d.Info, d.Tools, d.Prompts, d.Templates)
				if err != nil {
					return fmt.Errorf("server %q: %w", name, err)
				}
				refused = append(refused, screen(live, pinned.Server(name), flagged[name], acceptFlagged)...)
				changes = append(changes, lock.Diff(pinned.Server(name), live)...)
				next.Put(live)
			}
			changes = append(changes, refused...)
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
			// Under the lockfile's file lock, as the console's accept and
			// reject write it: a change another process made meanwhile to a
			// server this run did not pin is kept, not overwritten.
			write := func(cur *lock.Lock) error {
				if server == "" {
					cur.Servers = next.Servers
					return nil
				}
				if s := next.Server(server); s != nil {
					cur.Put(s)
				}
				return nil
			}
			if unreadable {
				err = next.WriteFile(path) // written anew, as warned
			} else {
				_, err = lock.Update(cmd.Context(), path, write)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Wrote %s: %s, %d change(s).\n", path, count(len(next.Servers), "server"), len(changes)-len(refused))
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

// screen applies the chain's findings to a server's new entry: a flagged
// tool is pinned only when accept is set, or when the old entry pinned
// the very same definition with accepted findings (a person has said yes
// to it before); otherwise its old pin stays, or it is left out, and it
// is returned as a "flagged" change.
func screen(live, old *lock.Server, flags map[string][]policy.Flag, accept bool) []lock.Change {
	var refused []lock.Change
	kept := live.Tools[:0]
	for _, it := range live.Tools {
		fs := flags[it.Name]
		if len(fs) == 0 {
			kept = append(kept, it)
			continue
		}
		texts := make([]string, len(fs))
		for i, f := range fs {
			texts[i] = f.String()
		}
		var prev *lock.Item
		if old != nil {
			for i := range old.Tools {
				if old.Tools[i].Name == it.Name {
					prev = &old.Tools[i]
				}
			}
		}
		if accept || prev != nil && prev.SHA256 == it.SHA256 && len(prev.Flags) > 0 {
			it.Flags = texts
			kept = append(kept, it)
			continue
		}
		refused = append(refused, lock.Change{Server: live.Name, Kind: "tool", Name: it.Name, What: "flagged", New: it.Description, Flags: texts})
		if prev != nil {
			kept = append(kept, *prev)
		}
	}
	live.Tools = kept
	return refused
}

// readLock reads cfg's lockfile for enforcement: none is nil; a broken one
// stops the command, since running unpinned would be silent. Entries of
// servers the config no longer has are said (nexus lock drops them).
func (a *app) readLock(cfg *config.Config) (*lock.Lock, error) {
	l, err := host.ReadLock(cfg)
	if err != nil {
		return nil, &exitError{exitUsage, err}
	}
	if l != nil {
		for _, s := range l.Servers {
			if cfg.Server(s.Name) == nil {
				fmt.Fprintf(a.stderr, "Warning: %s pins server %q, which is not configured; nexus lock drops it\n", host.LockPath(cfg), s.Name)
			}
		}
	}
	return l, nil
}
