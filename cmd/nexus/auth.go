package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
)

// nexus auth login|logout|status SERVER: the OAuth tokens of HTTP servers.
// Tokens live in ~/.nexus/tokens, one 0600 file per server URL; a server
// that answers 401 during any command starts the same login by itself.
func (a *app) authCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Log in to OAuth-protected HTTP servers, log out, and show what is stored",
		Long: `Log in to OAuth-protected HTTP servers, log out, and show what is stored.

A server that answers 401 logs Nexus in by itself on first use; "login" does
it ahead of time. For people the login opens the authorization page in a
browser (and prints its URL) and waits for the redirect back to Nexus; servers
with "grant": "client_credentials", "enterprise" or "jwt_bearer" (workload
identity: the platform's JWT for the workload) in their oauth block log in
without one. Tokens are kept per server URL in ~/.nexus/tokens (0600 files)
and refreshed before they expire.`,
	}
	cmd.AddCommand(a.authLoginCmd(), a.authLogoutCmd(), a.authStatusCmd())
	return cmd
}

// authHost opens the host with the auth commands' settings.
func (a *app) authHost() (*host.Host, error) {
	a.auth = host.AuthOptions{Out: a.stderr}
	return a.openHost()
}

func (a *app) authLoginCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "login SERVER",
		Short:   "Authorize Nexus at an HTTP server now and store the token",
		Example: "  nexus auth login github",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := a.authHost()
			if err != nil {
				return err
			}
			defer h.Close()
			a.target = args[0]
			if err := h.AuthLogin(cmd.Context(), args[0]); err != nil {
				return err
			}
			st, err := h.AuthStatus(args[0])
			if err != nil {
				return err
			}
			if a.output == "json" {
				a.printJSON(statusJSON(st))
				return nil
			}
			fmt.Fprintf(a.stdout, "Logged in to %s (%s).\n", st.Server, st.ServerURL)
			printStatusDetails(a, st)
			return nil
		},
	}
}

func (a *app) authLogoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "logout SERVER",
		Short:   "Forget an HTTP server's token (revoking it where the server allows)",
		Example: "  nexus auth logout github",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := a.authHost()
			if err != nil {
				return err
			}
			defer h.Close()
			a.target = args[0]
			before, err := h.AuthStatus(args[0])
			if err != nil {
				return err
			}
			if err := h.AuthLogout(cmd.Context(), args[0]); err != nil {
				return err
			}
			if before.LoggedIn {
				fmt.Fprintf(a.stdout, "Logged out of %s; its token is deleted.\n", before.Server)
			} else {
				fmt.Fprintf(a.stdout, "Nexus was not logged in to %s; nothing is stored for it now.\n", before.Server)
			}
			return nil
		},
	}
}

func (a *app) authStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status [SERVER]",
		Short: "Show the stored authorization of an HTTP server (of every one without SERVER)",
		Example: `  nexus auth status github
  nexus auth status --output json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := a.authHost()
			if err != nil {
				return err
			}
			defer h.Close()
			var names []string
			if len(args) == 1 {
				names = args
				a.target = args[0]
			} else {
				for _, s := range a.cfg.Servers() {
					if s.Type == host.TypeHTTP || s.Type == host.TypeSSE {
						names = append(names, s.Name)
					}
				}
			}
			var all []map[string]any
			for i, name := range names {
				st, err := h.AuthStatus(name)
				if err != nil {
					if len(args) == 1 {
						return err
					}
					fmt.Fprintf(a.stderr, "%s: %v\n", name, firstLine(err.Error()))
					continue
				}
				if a.output == "json" {
					all = append(all, statusJSON(st))
					continue
				}
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				state := "not logged in"
				switch {
				case st.LoggedIn && st.Expired && st.CanRefresh:
					state = "logged in (the access token expired; it is refreshed on next use)"
				case st.LoggedIn && st.Expired:
					state = "logged in, but the token expired: run nexus auth login " + st.Server
				case st.LoggedIn:
					state = "logged in"
				}
				fmt.Fprintf(a.stdout, "%s (%s): %s\n", st.Server, st.ServerURL, state)
				printStatusDetails(a, st)
			}
			if a.output == "json" {
				if len(args) == 1 && len(all) == 1 {
					a.printJSON(all[0])
				} else {
					a.printJSON(all)
				}
			} else if len(names) == 0 {
				fmt.Fprintln(a.stdout, "No HTTP servers are configured.")
			}
			return nil
		},
	}
}

func printStatusDetails(a *app, st host.OAuthStatus) {
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(a.stdout, "  %-14s %s\n", k+":", v)
		}
	}
	line("grant", st.Grant)
	line("issuer", st.Issuer)
	if st.ClientID != "" {
		line("client", fmt.Sprintf("%s (%s)", st.ClientID, clientSource(st.ClientSource)))
	}
	if len(st.Scopes) > 0 {
		line("scopes", strings.Join(st.Scopes, " "))
	}
	if !st.Expiry.IsZero() {
		line("expires", st.Expiry.Local().Format(time.RFC3339))
	}
	if st.LoggedIn {
		line("refreshable", fmt.Sprint(st.CanRefresh))
	}
	if st.DPoP {
		line("bound", "DPoP (RFC 9449): useless without Nexus's key")
	}
	line("token file", st.File)
}

func clientSource(s string) string {
	switch s {
	case "config":
		return "from the config"
	case "cimd":
		return "client ID metadata document"
	case "dcr":
		return "registered dynamically"
	}
	return s
}

func statusJSON(st host.OAuthStatus) map[string]any {
	m := map[string]any{
		"server": st.Server, "url": st.ServerURL, "logged_in": st.LoggedIn, "expired": st.Expired,
		"refreshable": st.CanRefresh, "grant": st.Grant,
	}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set("issuer", st.Issuer)
	set("client_id", st.ClientID)
	set("client_source", st.ClientSource)
	set("token_file", st.File)
	if len(st.Scopes) > 0 {
		m["scopes"] = st.Scopes
	}
	if !st.Expiry.IsZero() {
		m["expires"] = st.Expiry.UTC().Format(time.RFC3339)
	}
	return m
}
