package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/suggest"
)

// explainErr has the host explain an error that reaches the command line
// (host.Describe), naming this command line's commands and flags in the
// fixes.
func (a *app) explainErr(err error) error {
	return host.Describe(a.cfg, err, host.DescribeOptions{Agent: a.agent, Server: a.target, Timeout: a.timeout, Hints: cliHints})
}

// cliHints are the commands and flags the fixes of a report name.
var cliHints = host.Hints{
	ListTools: func(server string, schemas bool) string {
		cmd := "nexus tools"
		if server != "" {
			cmd += " --server " + server
		}
		if schemas {
			cmd += " -o json"
		}
		return cmd
	},
	ListServers: "nexus servers",
	TimeoutFlag: "--timeout",
	Arguments:   "key=value takes the type the schema gives the property (a string stays a string; n=3, b=true, o={\"x\":1} are JSON for a number, boolean or object); key:=value always sends JSON",
}

// suggestFlag adds the nearest flag name to cobra's "unknown flag" error,
// as cobra itself does for unknown commands.
func suggestFlag(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	add := func(f *pflag.Flag) { names = append(names, f.Name) }
	cmd.Flags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	sort.Strings(names)
	if near := suggest.Nearest(name, names); near != "" {
		//lint:ignore ST1005 the blank line after it is the one every usage error has (err_unknown_flag.golden)
		return fmt.Errorf("%w\n\nDid you mean this?\n\t--%s\n", err, near)
	}
	return err
}

// cwdRoots offers the working directory as the one root: what the
// command line works on when the config names no roots.
func cwdRoots(context.Context) ([]mcp.Root, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return []mcp.Root{{URI: fileURI(dir), Name: filepath.Base(dir)}}, nil
}

// fileURI is the file:// URI of an absolute path, on Windows too
// (file:///C:/Users/...).
func fileURI(path string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}
