package main

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
)

func (a *app) auditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check the audit log's chain and checkpoints, or make its keys",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErr("nexus audit needs a verb: verify, keygen")
		},
	}
	cmd.AddCommand(a.auditVerifyCmd(), a.auditKeygenCmd())
	return cmd
}

func (a *app) auditVerifyCmd() *cobra.Command {
	var checkpoints, public string
	cmd := &cobra.Command{
		Use:   "verify FILE...",
		Short: "Check that no record of an audit log was edited, deleted, moved or cut off",
		Long: `Check an audit log (the audit block's path): every line a record, seq going
up by one, each record linked to the line before it: by "mac", HMAC-SHA256 with
the audit block's key (which nobody without the key can recompute), or by
"prev", plain sha256 (which shows accidental damage only). Then check it against
the signed checkpoints (ed25519) the writer put in the checkpoint file every
checkpoint_every records and at shutdown: each must match the record it names,
and no file may end before its newest one, so records cut from the end or
edited there are caught too. Records after the newest checkpoint are reported
as not yet covered by one.

The key, the public key and the checkpoint file come from the audit block of
the config in force (--config, or the usual files), else from NEXUS_AUDIT_KEY
and NEXUS_AUDIT_SIGNING_KEY and FILE.checkpoints beside the last FILE.

Give a rotated log's files oldest first: nexus-audit.jsonl.3 .2 .1 and the
active one; the chain runs across them. Each break is told as a transparency
log's auditor tells it: what the chain or the signed checkpoint expected, what
is there, and what that means. Exit 0 when it holds, 1 naming the first break,
3 when a file or key cannot be read.`,
		Example: `  nexus audit verify nexus-audit.jsonl
  nexus audit verify nexus-audit.jsonl.2 nexus-audit.jsonl.1 nexus-audit.jsonl
  nexus audit verify --checkpoints /mnt/elsewhere/audit.checkpoints nexus-audit.jsonl`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := a.verifyOptions(args[len(args)-1], checkpoints, public)
			if err != nil {
				return &exitError{exitConnection, err}
			}
			rep, err := host.VerifyAudit(o, args...)
			var broken *host.AuditBreakError
			if a.output != "json" && (err == nil || errors.As(err, &broken)) {
				for _, w := range rep.Warnings {
					fmt.Fprintln(a.stderr, "warning: "+w)
				}
			}
			switch {
			case errors.As(err, &broken):
				if a.output == "json" {
					a.printJSON(struct {
						Intact bool                  `json:"intact"`
						Report host.AuditReport      `json:"read"`
						Break  *host.AuditBreakError `json:"break"`
					}{false, rep, broken})
				} else {
					fmt.Fprintf(a.stdout, "BROKEN: %s\n%s read. The records from that one on cannot be trusted; keep the files as evidence.\n", clean(broken.Error()), count(rep.Records, "record"))
				}
				return &exitError{exitToolError, errors.New("the audit log's chain is broken")}
			case errors.Is(err, fs.ErrNotExist), err != nil:
				return &exitError{exitConnection, fmt.Errorf("reading the audit log: %w", err)}
			}
			if a.output == "json" {
				a.printJSON(struct {
					Intact bool             `json:"intact"`
					Report host.AuditReport `json:"read"`
				}{true, rep})
				return nil
			}
			fmt.Fprintf(a.stdout, "OK: %s, %s (seq %d-%d); the chain is intact.\n", count(rep.Files, "file"), count(rep.Records, "record"), rep.First, rep.Last)
			if rep.Keyed > 0 {
				fmt.Fprintf(a.stdout, "%s linked by HMAC-SHA256 (key id %s): nobody without the key could have rewritten them.\n", count(rep.Keyed, "record"), rep.KeyID)
			}
			if rep.Checkpoints > 0 {
				fmt.Fprintf(a.stdout, "%s matched; the newest covers seq %d (signed %s).\n", count(rep.Checkpoints, "signed checkpoint"), rep.Covered, rep.CoveredAt.Format(time.RFC3339))
			}
			if rep.Uncovered > 0 && o.Checkpoints != "" && o.Public != nil {
				fmt.Fprintf(a.stdout, "Not yet covered by a checkpoint: %s (seq %d-%d); cutting or editing them would go unnoticed.\n", count(rep.Uncovered, "record"), rep.Last-uint64(rep.Uncovered)+1, rep.Last)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&checkpoints, "checkpoints", "", "the checkpoint file (default: the audit block's checkpoint_path, else FILE.checkpoints)")
	cmd.Flags().StringVar(&public, "public-key", "", "the base64 ed25519 public key that checks the checkpoints (default: the audit block's)")
	return cmd
}

// verifyOptions finds the keys and checkpoint file: the flags, the audit
// block of the config in force, the environment, beside the last file.
func (a *app) verifyOptions(last, checkpoints, public string) (host.VerifyAuditOptions, error) {
	cfg, err := a.loadConfig(false)
	if err != nil && a.configPaths != nil {
		return host.VerifyAuditOptions{}, fmt.Errorf("loading the config for the audit block's keys: %w", err)
	}
	if err != nil {
		cfg = nil
	}
	return host.AuditVerifyOptions(cfg, last, checkpoints, public)
}

func (a *app) auditKeygenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen",
		Short: "Make an HMAC key and an ed25519 signing key for the audit log",
		Long: `Print a fresh HMAC key (it keys the chain: nobody without it can rewrite the
log undetected) and an ed25519 signing key (it signs the checkpoints), with the
public key that checks them. Keep the first two secret: in sensitive variables
(key = var.audit_key, signing_key = var.audit_signing_key) or in
NEXUS_AUDIT_KEY and NEXUS_AUDIT_SIGNING_KEY. The public key may go to whoever
verifies the log (public_key in their audit block, or --public-key).`,
		Example: `  nexus audit keygen
  nexus audit keygen -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			key, signing, public, err := host.NewAuditKeys()
			if err != nil {
				return err
			}
			if a.output == "json" {
				a.printJSON(map[string]string{"key": key, "signing_key": signing, "public_key": public})
				return nil
			}
			fmt.Fprintf(a.stdout, "# Secret: the chain's HMAC key and the checkpoints' signing key.\nNEXUS_AUDIT_KEY=%s\nNEXUS_AUDIT_SIGNING_KEY=%s\n# Public: checks the checkpoints (public_key in a verifier's audit block).\npublic_key = %q\n", key, signing, public)
			return nil
		},
	}
}
