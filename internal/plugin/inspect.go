package plugin

import (
	"context"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/internal/config"
)

// InspectOptions tune Inspect.
type InspectOptions struct {
	Logger       hclog.Logger
	StartTimeout time.Duration
	// SHA256, if set, must match the binary, as in a plugin block.
	SHA256 string
}

// Inspect runs the plugin binary at path just long enough to ask what it
// offers: kinds, protocol versions, config schemas. The binary runs: only
// inspect binaries you trust. Info.SHA256 is the checksum to pin.
func Inspect(ctx context.Context, path string, o InspectOptions) (Info, error) {
	empty := ""
	m := NewManager(Options{Logger: o.Logger, StartTimeout: o.StartTimeout, InsecureSkipChecksum: true, Reattach: &empty})
	defer m.Close()
	m.log = hclog.NewNullLogger() // no warning about the checksum: inspecting is the way to learn it
	p, err := m.Open(ctx, &config.Plugin{Name: filepath.Base(path), Path: path, SHA256: o.SHA256})
	if err != nil {
		return Info{}, err
	}
	info := p.Info()
	if info.SHA256 == "" {
		info.SHA256, _ = fileSHA256(path)
	}
	return info, nil
}
