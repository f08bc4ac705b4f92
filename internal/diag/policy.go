package diag

// Denial describes a request that a link of the policy chain refused. The
// fields are plain values so that this package stays below the policy
// package; callers fill them from a *policy.DeniedError and the config.
type Denial struct {
	Method string // "tools/call", "resources/read", ...
	Tool   string // the tool's name on its server, for tools/call
	Link   string // "permission", "rules", a filter's name, or "chain"
	Kind   string // "policy" or "sanitizer"
	Reason string // what the link said
	// Failure is the link's own error when it failed and failed closed
	// (a trap, a timeout, an invalid decision); Reason is then empty.
	Failure string

	Agent       string
	AgentSource Source // where the agent block is; zero when it is the built-in default
	LinkSource  Source // where the filter is defined; zero for built-in links
}

// builtinLinks are the links Nexus itself puts first in the chain.
var builtinLinks = map[string]string{
	"permission": "the built-in permission check (agent permission levels yolo, trusted, sandboxed)",
	"rules":      "the built-in rules of the agent (its servers, allow and deny lists)",
	"chain":      "the filter chain itself (a filter returned a change Nexus does not accept)",
}

// PolicyDenied reports a request stopped by the policy chain: which link
// stopped it, why, and where that link and the agent are configured.
func PolicyDenied(c Context, d Denial) *Report {
	r := c.report("Request Denied by Policy")
	what := d.Method
	switch {
	case d.Tool != "" && c.Server != "":
		what = d.Method + " of " + c.Server + "." + d.Tool
	case c.Server != "" && d.Method != "":
		what = d.Method + " on server " + quote(c.Server)
	case what == "":
		what = "The request"
	}
	kind := d.Kind
	if kind == "" {
		kind = "policy"
	}
	desc, builtin := builtinLinks[d.Link]
	if builtin {
		r.Problem = what + " was denied by " + desc
	} else {
		r.Problem = what + " was denied by " + kind + " " + quote(d.Link)
	}

	if d.Failure != "" {
		r.Details = append(r.Details, Section{Heading: "The " + kind + " failed", Lines: []string{d.Failure}})
	} else {
		reason := d.Reason
		if reason == "" {
			reason = "(the " + kind + " gave no reason)"
		}
		r.Details = append(r.Details, Section{Heading: "Reason", Lines: []string{reason}})
	}

	var chain []string
	if !builtin && d.Link != "" {
		line := "filter " + quote(d.Link) + " (" + kind + ")"
		if s := d.LinkSource.String(); s != "" {
			line += ", defined in " + s
		}
		chain = append(chain, line)
	}
	if d.Agent != "" {
		line := "agent " + quote(d.Agent)
		if s := d.AgentSource.String(); s != "" {
			line += ", defined in " + s
		} else {
			line += ", not configured (the built-in default applies)"
		}
		chain = append(chain, line)
	}
	if len(chain) > 0 {
		r.Details = append(r.Details, Section{Heading: "Decided by", Lines: chain})
	}

	switch {
	case d.Failure != "":
		r.Causes = []string{"The filter failed (an error, trap, timeout or invalid decision), and a failing " + kind + " denies by default"}
		where := ""
		if d.LinkSource.File != "" {
			where = " in " + shortenHome(d.LinkSource.File)
		}
		pass := `on_error = "allow"` // the request, or the unsanitized result, goes on
		r.FixHeading = "Fix"
		r.Fix = []string{
			"Check the filter with nexus filter inspect and nexus filter test",
			"To go on while it fails, set " + pass + " in its block" + where + " (only if that is safe)",
		}
	case !builtin && d.Link != "":
		where := ""
		if d.LinkSource.File != "" {
			where = " in " + shortenHome(d.LinkSource.File)
		}
		r.FixHeading = "Fix"
		r.Fix = []string{
			"If this request should be allowed, change the filter's config or match" + where,
			"Try the filter on this request with nexus filter test",
		}
	}
	return r
}
