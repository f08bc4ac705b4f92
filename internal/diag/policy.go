package diag

import "strconv"

// Denial describes a request that a link of the policy chain refused. The
// fields are plain values so that this package stays below the policy
// package; callers fill them from a *policy.DeniedError and the config.
type Denial struct {
	Method string // "tools/call", "resources/read", ...
	Tool   string // the tool's name on its server, for tools/call
	Link   string // "permission", "rules", a filter's name, or "chain"
	// LinkKind is what the link is, for a fix that fits it: LinkWASM,
	// LinkPlugin, LinkRule or LinkLock; "" for the built-in links.
	LinkKind string
	Kind     string // "policy" or "sanitizer"
	Reason   string // what the link said
	// Failure is the link's own error when it failed and failed closed
	// (a trap, a timeout, an invalid decision); Reason is then empty.
	Failure string

	Agent       string
	AgentSource Source // where the agent block is; zero when it is the built-in default
	LinkSource  Source // where the filter is defined; zero for built-in links
}

// Kinds of a refusing link (Denial.LinkKind).
const (
	LinkWASM   = "wasm"   // a WASM filter
	LinkPlugin = "plugin" // a go-plugin filter
	LinkRule   = "rule"   // a CEL rule block
	LinkLock   = "lock"   // the lockfile
)

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
		switch d.LinkKind {
		case LinkLock:
			r.Problem = what + " was withheld by the lockfile"
		case LinkRule:
			r.Problem = what + " was denied by rule " + quote(d.Link)
		}
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
		switch d.LinkKind {
		case LinkLock:
			line = "the lockfile, which pins each tool's definition (nexus lock)"
		case LinkRule:
			line = "rule " + quote(d.Link) + " (" + kind + ")"
		}
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

	where := ""
	if f := d.LinkSource.File; f != "" {
		where = " in " + shortenHome(f)
		if d.LinkSource.Line > 0 {
			where += ", line " + strconv.Itoa(d.LinkSource.Line)
		}
	}
	r.FixHeading = "Fix"
	switch {
	case d.LinkKind == LinkLock:
		r.Fix = []string{"Review what changed: nexus lock --check"}
		if c.Server != "" {
			r.Fix = append(r.Fix, "If the change is safe, accept it: nexus lock --server "+c.Server)
		}
	case d.Failure != "":
		r.Causes = []string{"The filter failed (an error, trap, timeout or invalid decision), and a failing " + kind + " denies by default"}
		switch d.LinkKind {
		case LinkRule:
			r.Causes[0] = "The rule's expression failed on this request, and a failing " + kind + " denies by default"
			r.Fix = []string{"Check the rule's when" + where + " against this request: nexus explain shows what it saw"}
		case LinkPlugin:
			r.Fix = []string{"Check the plugin with nexus plugin inspect, and its log lines above"}
		default:
			r.Fix = []string{"Check the filter with nexus filter inspect and nexus filter test"}
		}
		// The request, or the unsanitized result, goes on.
		r.Fix = append(r.Fix, `To go on while it fails, set on_error = "allow" in its block`+where+" (only if that is safe)")
	case d.LinkKind == LinkRule:
		r.Fix = []string{
			"If this request should be allowed, change the rule's when or action" + where,
			"See every link's decision on this request with nexus explain",
		}
	case !builtin && d.Link != "":
		r.Fix = []string{"If this request should be allowed, change the filter's config or match" + where}
		if d.LinkKind == LinkWASM {
			r.Fix = append(r.Fix, "Try the filter on this request with nexus filter test")
		}
	default:
		r.FixHeading, r.Fix = "", nil
	}
	return r
}
