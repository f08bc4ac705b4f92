package main

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/internal/audit"
)

func (a *app) auditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check the audit log's hash chain",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErr("nexus audit needs a verb: verify")
		},
	}
	cmd.AddCommand(a.auditVerifyCmd())
	return cmd
}

func (a *app) auditVerifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify FILE...",
		Short: "Check that no record of an audit log was edited, deleted or moved",
		Long: `Check the hash chain of an audit log (the audit block's path): every line a
record, seq going up by one, each record's prev the sha256 of the line before.
Give a rotated log's files oldest first: nexus-audit.jsonl.3 .2 .1 and the
active one; the chain runs across them. Exit 0 when it holds, 1 naming the first
edited, deleted, moved or torn record, 3 when a file cannot be read.`,
		Example: `  nexus audit verify nexus-audit.jsonl
  nexus audit verify nexus-audit.jsonl.2 nexus-audit.jsonl.1 nexus-audit.jsonl`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := audit.Verify(args...)
			var broken *audit.Error
			switch {
			case errors.As(err, &broken):
				if a.output == "json" {
					a.printJSON(struct {
						Intact bool         `json:"intact"`
						Report audit.Report `json:"read"`
						Break  *audit.Error `json:"break"`
					}{false, rep, broken})
				} else {
					fmt.Fprintf(a.stdout, "BROKEN: %s\n%s read. The records from that one on cannot be trusted; keep the files as evidence.\n", broken, count(rep.Records, "record"))
				}
				return &exitError{exitToolError, errors.New("the audit log's chain is broken")}
			case errors.Is(err, fs.ErrNotExist), err != nil:
				return &exitError{exitConnection, fmt.Errorf("reading the audit log: %w", err)}
			}
			if a.output == "json" {
				a.printJSON(struct {
					Intact bool         `json:"intact"`
					Report audit.Report `json:"read"`
				}{true, rep})
				return nil
			}
			fmt.Fprintf(a.stdout, "OK: %s, %s (seq %d-%d); the chain is intact.\n", count(rep.Files, "file"), count(rep.Records, "record"), rep.First, rep.Last)
			return nil
		},
	}
}
