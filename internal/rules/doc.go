// Package rules runs CEL rules: one-line policies written in the config,
//
//	rule "no-deletes-for-ci" {
//	  when   = "agent.id == 'ci' && tool.name.startsWith('delete_')"
//	  action = "deny"
//	  reason = "CI may not delete"
//	}
//
// in the chain beside WASM filters, Rego policies and plugins, with the
// same event. A rule's when expression (CEL, github.com/google/cel-go)
// says when it acts; its action is deny (with the reason), allow, or
// modify, whose set gives dotted paths into the request's params (a
// policy: "arguments.limit") or the response's result (a sanitizer) and
// the expressions of their new values. A rule written in an agent block
// sees only that agent's events.
//
// Compile type-checks every expression against the variables below
// (Variables lists them for docs and tools), once, at config load: a
// syntax error, an unknown variable, a misspelt field of a typed object
// (agent.idd) or a when that is not a bool is a *CompileError whose
// problems point at the line and column in the config file.
//
//	phase, method         string
//	agent                 id, permission
//	server                name, info.name, info.version
//	tool                  name, annotations.{title, readOnlyHint,
//	                      destructiveHint, idempotentHint, openWorldHint}
//	                      (MCP's defaults where the server gave none)
//	args                  map: the tools/call arguments (empty otherwise)
//	params, result        map: the request's params, the response's result
//	uri, prompt           string: of a resources/read, a prompts/get
//
// Integers in args, params and result are CEL ints, other numbers
// doubles, and the two compare with each other. The strings, lists, sets,
// math and regex extensions are on.
//
// An evaluation may spend MaxCost units (DefaultMaxCost: about one per
// operation and per element a comprehension visits) and stops when its
// context is done. A failed evaluation (a missing key, the cost limit, a
// type the expression did not expect) is an error naming the rule, the
// expression and where it is written, with the usual fix; the chain fails
// closed on it. Only the variables a rule uses are built: a rule on a
// tool's name never decodes the arguments.
package rules
