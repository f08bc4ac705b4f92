package host

import (
	"context"
	"path/filepath"

	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/telemetry"
)

// Lock is a tool lockfile (nexus.lock.hcl): the tools of each server pinned as
// they were reviewed. A host given one (Options.Lock) withholds every tool
// that is not pinned as it is now.
type Lock = lock.Lock

// Drift is a tool the lockfile withholds as its server defines it now:
// its pin, the changed fields and the chain's findings (Host.Drift).
type Drift = lock.Drift

// LockPath is where cfg's lockfile lives: nexus.lock.hcl beside its first
// config file (the working directory for the built-in default).
func LockPath(cfg *Config) string {
	if len(cfg.Files) > 0 && cfg.Files[0].Path != "" {
		return filepath.Join(filepath.Dir(cfg.Files[0].Path), lock.FileName)
	}
	return lock.FileName
}

// ReadLock reads cfg's lockfile (LockPath) for Options.Lock. None is
// (nil, nil); one that cannot be used is an error that says where and
// what is wrong, since running unpinned because of it would be silent.
func ReadLock(cfg *Config) (*Lock, error) { return lock.Read(LockPath(cfg)) }

// Telemetry traces requests with OpenTelemetry and counts them for
// Prometheus (Options.Telemetry). Shutdown sends the spans still queued;
// Metrics().Handler() serves the metrics.
type Telemetry = telemetry.Telemetry

// OpenTelemetry sets up tracing as cfg's telemetry block and the standard
// OTEL_* environment variables say (none: no exporter, and tracing costs
// nothing), and Prometheus metrics when metrics is true.
func OpenTelemetry(cfg *Config, metrics bool) (*Telemetry, error) {
	o := telemetry.Options{Metrics: metrics}
	if b := cfg.Telemetry; b != nil {
		o.Tracing, o.Endpoint, o.Protocol, o.ServiceName, o.LinkSpans = true, b.Endpoint, b.Protocol, b.ServiceName, b.LinkSpans
	}
	return telemetry.New(context.Background(), o)
}

// OpenApprovals keeps a person's "always" answers in the file at path for
// Options.Approvals, valid for cfg's servers as they are now (Fingerprints):
// a server whose command, URL or transport changed is asked about again.
// None yet at path is no error.
func OpenApprovals(path string, cfg *Config) (Approvals, error) {
	a, err := policy.OpenApprovals(path, Fingerprints(cfg))
	if err != nil {
		return nil, err
	}
	return a, nil
}
