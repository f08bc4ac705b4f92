package host

import (
	"context"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/sampling"
)

// SamplingModel answers servers' sampling requests through the model a
// config's sampling block names (an OpenAI-compatible chat completions
// endpoint), within the block's limits: the servers it lists, requests
// per minute, tokens. A program gives it to Options.Sampling for the
// servers it allows, or asks a person first where Confirm says so. Safe
// for concurrent use.
type SamplingModel struct {
	m       *sampling.Model
	confirm bool
}

// NewSamplingModel makes the model of cfg's sampling block; nil when cfg
// has none.
func NewSamplingModel(cfg *Config) *SamplingModel {
	c := internalConfig(cfg)
	if c == nil || c.Sampling == nil {
		return nil
	}
	return &SamplingModel{m: sampling.New(c.Sampling, nil), confirm: c.Sampling.Confirm}
}

// Name is the model's name, as a person is told it.
func (m *SamplingModel) Name() string { return m.m.Name() }

// Allowed says whether server may sample through the model.
func (m *SamplingModel) Allowed(server string) bool { return m.m.Allowed(server) }

// Confirm says whether the block has a person confirm each request
// before it goes to the model (confirm, true unless set false).
func (m *SamplingModel) Confirm() bool { return m.confirm }

// Create answers one request of server's; a limit or a failure at the
// endpoint is a *SamplingError, which names the server.
func (m *SamplingModel) Create(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	res, err := m.m.Create(ctx, server, p)
	return res, hostErr(err)
}
