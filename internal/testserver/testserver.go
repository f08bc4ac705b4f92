package testserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// Name and Version are the serverInfo the test server introduces itself with.
const (
	Name    = "nexus-testserver"
	Version = "1.0.0"
)

// Environment variables read by OptionsFromEnv.
const (
	EnvToolCount = "MCP_TOOL_COUNT"
	EnvPageSize  = "MCP_PAGE_SIZE"
	// EnvStartDelay makes the server wait before it serves, like a real
	// server that loads a model or connects to a database first.
	EnvStartDelay = "MCP_START_DELAY"
	// EnvConformance=1 adds the conformance suite's fixtures.
	EnvConformance = "MCP_CONFORMANCE"
	// EnvVariant picks a variant of the echo tool's definition.
	EnvVariant = "MCP_TOOL_VARIANT"
	// EnvModernOnly=1 serves MCP 2026-07-28 alone.
	EnvModernOnly = "MCP_MODERN_ONLY"
	// EnvLegacyOnly=1 serves MCP 2025-11-25 and earlier alone.
	EnvLegacyOnly = "MCP_LEGACY_ONLY"
)

// MaxStartDelay bounds Options.StartDelay.
const MaxStartDelay = time.Minute

// MaxToolCount bounds Options.ToolCount: enough for any pagination test,
// small enough that a typo cannot make the server build millions of tools.
const MaxToolCount = 100000

// Instructions is what the server sends at initialize.
const Instructions = "Nexus built-in MCP test server: echo, time, arithmetic, progress, " +
	"error, sampling, elicitation, roots and large/binary output tools, plus sample " +
	"resources, prompts and completions for exercising MCP hosts."

// requestTimeout bounds the requests the server sends to the client from a
// tool (sampling, elicitation, roots). Elicitation waits for a person, so it
// is longer than the protocol default.
const requestTimeout = 5 * time.Minute

// Options configure the test server. The zero value serves the built-in
// tools on a single page.
type Options struct {
	// ToolCount adds generated tools tool_001..tool_NNN (zero-padded to the
	// width of the count, at least three digits) that echo their own name,
	// for pagination tests. 0 adds none. Env MCP_TOOL_COUNT.
	ToolCount int
	// PageSize is the page size of every list method; 0 puts everything on
	// one page. Env MCP_PAGE_SIZE.
	PageSize int
	// StartDelay is how long ServeStdio and ServeListener wait before serving
	// (a Go duration in env MCP_START_DELAY, at most MaxStartDelay): a
	// stand-in for servers that are slow to come up, so that benchmarks and
	// tests can show what a host does while it waits.
	StartDelay time.Duration
	// Logger receives the server's own diagnostics (never per-frame); nil
	// discards them.
	Logger hclog.Logger
	// Conformance adds the fixtures the official conformance suite's server
	// scenarios call (conformance.go). Env MCP_CONFORMANCE=1.
	Conformance bool
	// Variant changes the echo tool's definition: "" as usual,
	// VariantChanged, VariantPoisoned or VariantRugPull, for the lockfile's tests (a
	// server whose definitions change between runs). Env MCP_TOOL_VARIANT.
	Variant string
	// ModernOnly serves MCP 2026-07-28 alone (mcp.ServerOptions.ModernOnly),
	// as servers built only for the stateless revision do. Env
	// MCP_MODERN_ONLY=1.
	ModernOnly bool
	// LegacyOnly serves MCP 2025-11-25 and earlier alone
	// (mcp.ServerOptions.LegacyOnly), as servers built before the stateless
	// revision do; the conformance fixtures that need the client's input
	// ask it with server-initiated requests. Env MCP_LEGACY_ONLY=1.
	LegacyOnly bool
}

// OptionsFromEnv reads MCP_TOOL_COUNT, MCP_PAGE_SIZE and MCP_START_DELAY through getenv
// (os.Getenv when nil). Unset or empty variables mean 0. A value that is not
// a whole number >= 0 (or a tool count above MaxToolCount) is an error that
// names the variable.
func OptionsFromEnv(getenv func(string) string) (Options, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var o Options
	var err error
	if o.ToolCount, err = envInt(getenv, EnvToolCount, MaxToolCount); err != nil {
		return Options{}, err
	}
	if o.PageSize, err = envInt(getenv, EnvPageSize, 0); err != nil {
		return Options{}, err
	}
	if v := strings.TrimSpace(getenv(EnvStartDelay)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > MaxStartDelay {
			return Options{}, fmt.Errorf("environment variable %s=%q: want a duration from 0s to %s, such as 200ms", EnvStartDelay, v, MaxStartDelay)
		}
		o.StartDelay = d
	}
	o.Conformance = strings.TrimSpace(getenv(EnvConformance)) == "1"
	o.ModernOnly = strings.TrimSpace(getenv(EnvModernOnly)) == "1"
	o.LegacyOnly = strings.TrimSpace(getenv(EnvLegacyOnly)) == "1"
	o.Variant = strings.TrimSpace(getenv(EnvVariant))
	if err := o.checkVariant(); err != nil {
		return Options{}, fmt.Errorf("environment variable %s: %w", EnvVariant, err)
	}
	return o, nil
}

// CheckOptions refuses options the server cannot serve.
func CheckOptions(o Options) error {
	if o.ModernOnly && o.LegacyOnly {
		return errors.New("modern-only and legacy-only exclude each other: choose one")
	}
	return o.checkVariant()
}

// checkVariant refuses a variant the server does not have.
func (o Options) checkVariant() error {
	switch o.Variant {
	case "", VariantChanged, VariantPoisoned, VariantRugPull:
		return nil
	}
	return fmt.Errorf("unknown tool variant %q (want %q, %q or %q)", o.Variant, VariantChanged, VariantPoisoned, VariantRugPull)
}

// waitStart sleeps for o.StartDelay, or until ctx ends.
func (o Options) waitStart(ctx context.Context) error {
	if o.StartDelay <= 0 {
		return nil
	}
	t := time.NewTimer(min(o.StartDelay, MaxStartDelay))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// envInt parses a non-negative integer variable; max 0 means unbounded.
func envInt(getenv func(string) string, name string, max int) (int, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("environment variable %s=%q: want a whole number >= 0 (0 or unset means the default)", name, v)
	}
	if max > 0 && n > max {
		return 0, fmt.Errorf("environment variable %s=%d: at most %d is allowed", name, n, max)
	}
	return n, nil
}

// New returns the test server with every tool, resource, template and
// prompt registered. Serve it with (*mcp.Server).Serve, or use ServeStdio.
func New(o Options) *mcp.Server {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	o.ToolCount = min(max(o.ToolCount, 0), MaxToolCount)
	o.PageSize = max(o.PageSize, 0)
	s := mcp.NewServer(
		mcp.Implementation{Name: Name, Title: "Nexus test server", Version: Version},
		mcp.ServerOptions{
			Instructions: Instructions,
			PageSize:     o.PageSize,
			Logger:       o.Logger,
			Timeout:      requestTimeout,
			Completion:   complete,
			Logging:      true,
			ModernOnly:   o.ModernOnly,
			LegacyOnly:   o.LegacyOnly,
		})
	addTools(s, o.Variant)
	addGeneratedTools(s, o.ToolCount)
	addResources(s)
	addPrompts(s)
	if o.Conformance {
		addConformance(s, o.LegacyOnly)
	}
	o.Logger.Debug("test server ready", "generated_tools", o.ToolCount, "page_size", o.PageSize)
	return s
}
