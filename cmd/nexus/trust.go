package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
)

// trustPath is the trust store: $NEXUS_TRUST, else ~/.nexus/trust.json,
// the one host.LoadConfig consults.
func trustPath() string { return host.TrustPath() }

// trustTargets are the workspace config files args name: files as they
// are, directories by the config files discovery would find in them; with
// no args, those discovery finds from the working directory.
func trustTargets(args []string) ([]string, error) {
	if len(args) == 0 {
		out, err := host.WorkspaceConfigs()
		if err != nil {
			return nil, err
		}
		if len(out) == 0 {
			return nil, usageErr("no workspace config (.nexus/ or nexus.hcl) is in this directory or above it; give the PATH of one")
		}
		return out, nil
	}
	var out []string
	for _, p := range args {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, usageErr("%s: %v", p, unwrapPath(err))
		}
		if !fi.IsDir() {
			out = append(out, p)
			continue
		}
		found := host.WorkspaceFiles(p)
		if len(found) == 0 {
			return nil, usageErr("%s holds no workspace config (.nexus/mcp.json, .nexus/nexus.hcl, nexus.hcl, ...); give the file's path", p)
		}
		out = append(out, found...)
	}
	return out, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (a *app) trustCmd() *cobra.Command {
	var list bool
	cmd := &cobra.Command{
		Use:   "trust [PATH...]",
		Short: "Trust a workspace config (a .nexus/ found from here up) to start its servers and read its files",
		Long: `A config file found by walking up from the working directory (a parent's or this
directory's .nexus/, or ./nexus.hcl) comes with the repository it is in, so Nexus
starts none of its servers and reads none of the files it names (file(),
env_file) until you trust it. Every command says which files wait and what they
would run (at a terminal it asks whether to trust them there and then; --yes
never answers that). Trust is for the file's path and exact content (sha256), as direnv's
allow is: an edit, a pull or a checkout that changes the file takes it away.

nexus trust with no PATH trusts the workspace configs found from the working
directory; a PATH is a config file or a directory holding one. Trust is kept in
~/.nexus/trust.json ($NEXUS_TRUST). Your own ~/.nexus/ config, --config files and
NEXUS_CONFIG are trusted as they are.`,
		Example: `  nexus trust                       # the .nexus/ configs from here up
  nexus trust ~/src/app/.nexus/nexus.hcl
  nexus trust --list
  nexus untrust ~/src/app`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				if len(args) > 0 {
					return usageErr("--list takes no PATH")
				}
				return a.trustList()
			}
			paths, err := trustTargets(args)
			if err != nil {
				return err
			}
			var said strings.Builder // printed once the store has it
			err = host.UpdateTrust(trustPath(), func(entries []host.Trusted) ([]host.Trusted, error) {
				for _, p := range paths {
					key, err := host.TrustKey(p)
					if err != nil {
						return nil, usageErr("%s: %v", p, unwrapPath(err))
					}
					data, sum, err := host.HashConfig(key)
					if err != nil {
						return nil, usageErr("%s cannot be trusted: %v", p, err)
					}
					entries = host.Grant(entries, key, sum)
					fmt.Fprintf(&said, "Trusted %s (sha256 %s)\n", clean(key), sum[:12])
					for _, l := range host.ConfigInventory(key, data) {
						fmt.Fprintln(&said, "  "+clean(l))
					}
				}
				return entries, nil
			})
			if err != nil {
				return err
			}
			_, err = io.WriteString(a.stdout, said.String())
			return err
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "list the trusted files, and whether each is still as it was trusted")
	return cmd
}

func (a *app) trustList() error {
	entries, err := host.ReadTrust(trustPath())
	if err != nil {
		return err
	}
	type row struct {
		host.Trusted
		State string `json:"state"` // trusted, changed or missing
	}
	rows := make([]row, len(entries))
	for i, t := range entries {
		rows[i] = row{t, "trusted"}
		if _, sum, err := host.HashConfig(t.Path); err != nil {
			rows[i].State = "missing"
		} else if sum != t.SHA256 {
			rows[i].State = "changed"
		}
	}
	if a.output == "json" {
		a.printJSON(rows)
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintln(a.stdout, "No workspace config is trusted; nexus trust PATH trusts one.")
		return nil
	}
	var lines [][2]string
	for _, r := range rows {
		note := "trusted " + r.Granted.Format("2006-01-02 15:04 MST")
		switch r.State {
		case "changed":
			note += ", changed since: not used until trusted again"
		case "missing":
			note += ", missing"
		}
		lines = append(lines, [2]string{r.Path, note})
	}
	a.printTable(lines)
	return nil
}

func (a *app) untrustCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "untrust [PATH...]",
		Short: "Take back the trust nexus trust gave workspace configs (or --all)",
		Long: `Take trust back: the files' servers no longer start and the files they name are
no longer read. With no PATH, the workspace configs found from the working
directory; a PATH is a config file or a directory holding one, and need not
exist any more.`,
		Example: `  nexus untrust
  nexus untrust ~/src/app/.nexus/nexus.hcl
  nexus untrust --all`,
		RunE: func(cmd *cobra.Command, args []string) error {
			store := trustPath()
			if all {
				if len(args) > 0 {
					return usageErr("--all takes no PATH")
				}
				// A store that cannot be read is still replaced.
				entries, _ := host.ReadTrust(store)
				if err := host.UpdateTrust(store, nil); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "Untrusted %d file(s).\n", len(entries))
				return nil
			}
			keys := map[string]bool{}
			for _, p := range args {
				// A file gone or moved: its entry, by the path as given.
				if abs, err := filepath.Abs(p); err == nil {
					keys[abs] = true
				}
			}
			paths, err := trustTargets(args)
			if err != nil && len(args) == 0 {
				return err
			}
			for _, p := range paths {
				if k, err := host.TrustKey(p); err == nil {
					keys[k] = true
				}
			}
			removed := 0
			err = host.UpdateTrust(store, func(entries []host.Trusted) ([]host.Trusted, error) {
				before := len(entries)
				entries = slices.DeleteFunc(entries, func(t host.Trusted) bool { return keys[t.Path] })
				if removed = before - len(entries); removed == 0 {
					return nil, usageErr("none of these is trusted (nexus trust --list lists what is)")
				}
				return entries, nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Untrusted %d file(s).\n", removed)
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "take back every trust")
	return cmd
}

// trustWritten trusts a config file Nexus just wrote for the person, as it
// is now.
func trustWritten(path string) error {
	key, err := host.TrustKey(path)
	if err != nil {
		return err
	}
	_, sum, err := host.HashConfig(key)
	if err != nil {
		return err
	}
	return host.UpdateTrust(trustPath(), func(entries []host.Trusted) ([]host.Trusted, error) {
		return host.Grant(entries, key, sum), nil
	})
}

// askTrust offers, at a terminal, to trust the untrusted workspace configs
// us after showing what they would run; it trusts the content that was
// shown (its hash), so a file changed meanwhile stays untrusted. Without a
// terminal nobody is asked, and --yes does not answer: trust is a person's
// decision about a file, not about a call.
func (a *app) askTrust(cfg *host.Config) bool {
	con := a.console()
	if !con.canAsk() {
		return false
	}
	con.begin()
	defer con.end()
	rep := *host.UntrustedReport(cfg)
	rep.Fix = nil
	con.say("%s\n", clean(rep.Error()))
	ctx := a.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	line, err := con.read(ctx, "Trust it and go on? (nexus trust --list shows what is trusted) [y/N]: ")
	if err != nil || !strings.EqualFold(strings.TrimSpace(line), "y") && !strings.EqualFold(strings.TrimSpace(line), "yes") {
		return false
	}
	if err := host.TrustUntrusted(trustPath(), cfg); err != nil {
		con.say("The trust could not be saved: %v\n", err)
		return false
	}
	return true
}
