package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
)

// Sampling at the terminal: Nexus has no model of its own, so a server's
// sampling/createMessage is shown to the person, who types the reply or
// declines. Without a terminal (or with --sampling deny) the request is
// answered with the error the spec names for a refusal, which the server
// can read and report.

const (
	samplingAsk  = "ask"
	samplingDeny = "deny"
)

// codeUserRejected is the spec's error code for "User rejected sampling
// request".
const codeUserRejected = -1

// samplingModel names the "model" of a typed reply.
const samplingModel = "human (typed at the nexus terminal)"

func rejectSampling(why string) *mcp.RPCError {
	return &mcp.RPCError{Code: codeUserRejected, Message: "User rejected sampling request: " + why}
}

// model is the config's sampling model, made on first use; nil without a
// sampling block.
func (a *app) model() *host.SamplingModel {
	a.modelOnce.Do(func() { a.sampler = host.NewSamplingModel(a.cfg) })
	return a.sampler
}

// samplingHandler answers one server's sampling requests: through the
// config's model where its sampling block lists the server (a person
// confirming each request unless confirm = false), else typed at the
// terminal.
func (a *app) samplingHandler(server string) mcp.SamplingHandler {
	return func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		con := a.console()
		if m := a.model(); m != nil && m.Allowed(server) && !(a.sampling == samplingDeny && a.samplingChosen) {
			return a.sampleModel(ctx, con, m, server, p)
		}
		switch {
		case a.sampling == samplingDeny && a.samplingChosen:
			return nil, rejectSampling("sampling is turned off in this Nexus session (--sampling deny)")
		case a.sampling == samplingDeny:
			return nil, rejectSampling("Nexus has no model and no person at a terminal to answer (no terminal attached; on a terminal, --sampling ask lets you type the reply)")
		case !con.canAsk():
			return nil, rejectSampling("Nexus has no model and no person at a terminal to answer (no terminal attached)")
		}
		return con.sample(ctx, server, p)
	}
}

// sample shows the request and reads the reply.
func (c *console) sample(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	c.begin()
	defer c.end()
	c.say("%s", describeSampling(server, p))
	c.say("Nexus has no model: type the reply yourself. An empty line ends it; an empty reply declines.\n")
	var lines []string
	for {
		prompt := "reply> "
		if len(lines) > 0 {
			prompt = "  ...> "
		}
		line, err := c.read(ctx, prompt)
		switch {
		case errors.Is(err, io.EOF):
			return nil, rejectSampling("the terminal closed before a reply was typed")
		case errors.Is(err, errAborted):
			c.say("Declined.\n")
			return nil, rejectSampling("the person declined")
		case err != nil:
			return nil, err // the server withdrew the request, or the call ended
		}
		if line == "" {
			break
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		c.say("Declined: server %q gets a refusal.\n", server)
		return nil, rejectSampling("the person declined")
	}
	content, err := json.Marshal(mcp.TextContent(strings.Join(lines, "\n")))
	if err != nil {
		return nil, err
	}
	c.say("Reply sent to server %q.\n", server)
	return &mcp.CreateMessageResult{Role: "assistant", Content: content, Model: samplingModel, StopReason: "endTurn"}, nil
}

// describeSampling renders a sampling request for a person: who asks, the
// limits, the system prompt and every message. Everything is the server's
// text, so all of it is sanitized.
func describeSampling(server string, p *mcp.CreateMessageParams) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nServer %q asks for a model reply (sampling/createMessage).\n", server)
	fmt.Fprintf(&b, "  max tokens: %d\n", p.MaxTokens)
	if p.Temperature != nil {
		fmt.Fprintf(&b, "  temperature: %g\n", *p.Temperature)
	}
	if len(p.StopSequences) > 0 {
		q, _ := json.Marshal(p.StopSequences)
		fmt.Fprintf(&b, "  stop sequences: %s\n", clean(string(q)))
	}
	if hints := modelHints(p.ModelPreferences); hints != "" {
		fmt.Fprintf(&b, "  model hints: %s\n", hints)
	}
	if p.IncludeContext != "" && p.IncludeContext != "none" {
		fmt.Fprintf(&b, "  include context: %s (Nexus has no conversation to include)\n", clean(p.IncludeContext))
	}
	if len(p.Tools) > 0 && string(p.Tools) != "null" {
		var tools []struct {
			Name string `json:"name"`
		}
		json.Unmarshal(p.Tools, &tools)
		var names []string
		for _, t := range tools {
			names = append(names, t.Name)
		}
		fmt.Fprintf(&b, "  tools offered to the model: %s (a typed reply cannot call them)\n", clean(strings.Join(names, ", ")))
	}
	if p.SystemPrompt != "" {
		b.WriteString("  system prompt:\n")
		b.WriteString(indent(clean(p.SystemPrompt), "    "))
	}
	for _, m := range p.Messages {
		fmt.Fprintf(&b, "  [%s]\n", clean(m.Role))
		b.WriteString(indent(samplingContent(m.Content), "    "))
	}
	return b.String()
}

// samplingContent renders a message's content: one block or an array.
func samplingContent(raw json.RawMessage) string {
	var blocks []mcp.Content
	t := strings.TrimLeft(string(raw), " \t\r\n")
	if strings.HasPrefix(t, "[") {
		if err := json.Unmarshal(raw, &blocks); err != nil {
			return "[content that is not valid: " + err.Error() + "]"
		}
	} else {
		var c mcp.Content
		if err := json.Unmarshal(raw, &c); err != nil {
			return "[content that is not valid: " + err.Error() + "]"
		}
		blocks = []mcp.Content{c}
	}
	return clean(renderContent(blocks, nil))
}

func modelHints(raw json.RawMessage) string {
	var prefs struct {
		Hints []struct {
			Name string `json:"name"`
		} `json:"hints"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &prefs) != nil {
		return ""
	}
	var names []string
	for _, h := range prefs.Hints {
		if h.Name != "" {
			names = append(names, h.Name)
		}
	}
	return clean(strings.Join(names, ", "))
}

// indent prefixes every line of s and ends it with a newline.
func indent(s, prefix string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return prefix + "(empty)\n"
	}
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}

// sampleModel sends a request to the model, after a person confirmed it
// where the sampling block asks for that.
func (a *app) sampleModel(ctx context.Context, con *console, m *host.SamplingModel, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if m.Confirm() {
		if !con.canAsk() {
			return nil, rejectSampling(fmt.Sprintf("the sampling block has each request confirmed by a person and no terminal is attached; set confirm = false in it to let model %q answer unattended", m.Name()))
		}
		con.begin()
		con.say("%s", describeSampling(server, p))
		answer, err := con.read(ctx, fmt.Sprintf("Send it to model %q? [y]es, [n]o: ", m.Name()))
		con.end()
		if err != nil || !strings.EqualFold(strings.TrimSpace(answer), "y") && !strings.EqualFold(strings.TrimSpace(answer), "yes") {
			return nil, rejectSampling("declined at the terminal")
		}
	}
	res, err := m.Create(ctx, server, p)
	if err != nil {
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: err.Error()}
	}
	return res, nil
}
