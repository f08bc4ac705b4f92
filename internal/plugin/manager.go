package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/nexus-mcp/nexus/internal/config"
	pb "github.com/nexus-mcp/nexus/internal/pluginwire"
)

// Defaults of Options.
const (
	DefaultStartTimeout      = 10 * time.Second
	DefaultRestartBackoff    = 100 * time.Millisecond
	DefaultMaxRestartBackoff = 30 * time.Second
)

// Options configure a Manager.
type Options struct {
	// Logger receives the plugins' own log lines, each tagged with the
	// plugin's name (logger "<name>.plugin.<plugin>"), and the manager's
	// warnings. nil discards them.
	Logger hclog.Logger
	// StartTimeout bounds launch and handshake of one plugin process.
	StartTimeout time.Duration
	// InsecureSkipChecksum lets plugins without a sha256 in their plugin
	// block run, each with a loud warning. Without it they are refused.
	// A pinned sha256 is always checked.
	InsecureSkipChecksum bool
	// RestartBackoff is the delay before the first restart after a crash;
	// it doubles with each crash in a row up to MaxRestartBackoff.
	RestartBackoff    time.Duration
	MaxRestartBackoff time.Duration
	// Environ is the host environment the plugins' SafeEnvKeys are taken
	// from; nil means os.Environ.
	Environ func() []string
	// Reattach is the NEXUS_REATTACH_PLUGINS value; nil means the
	// environment variable is read.
	Reattach *string
}

// Manager launches and supervises plugin processes. Close stops them all;
// call it on every way out of the host, Ctrl-C included.
type Manager struct {
	opts Options
	log  hclog.Logger

	mu      sync.Mutex
	plugins map[string]*Plugin
	opening map[string]*opening // launches in progress, so that one runs per plugin
	closed  bool
}

// opening is a launch in progress; err is set before done closes.
type opening struct {
	done chan struct{}
	err  error
}

// NewManager makes a Manager; nothing runs until Open.
func NewManager(o Options) *Manager {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.RestartBackoff <= 0 {
		o.RestartBackoff = DefaultRestartBackoff
	}
	if o.MaxRestartBackoff <= 0 {
		o.MaxRestartBackoff = DefaultMaxRestartBackoff
	}
	if o.Environ == nil {
		o.Environ = osEnviron
	}
	return &Manager{opts: o, log: o.Logger, plugins: map[string]*Plugin{}, opening: map[string]*opening{}}
}

// reattachFor returns the reattach entry for name, if any.
func (m *Manager) reattachFor(name string) (*pb.Reattach, error) {
	v := ""
	if m.opts.Reattach != nil {
		v = *m.opts.Reattach
	} else {
		v = os.Getenv(pb.ReattachEnv)
	}
	if v == "" {
		return nil, nil
	}
	var all map[string]pb.Reattach
	if err := json.Unmarshal([]byte(v), &all); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object of plugin names to reattach configs: %v", pb.ReattachEnv, err)
	}
	r, ok := all[name]
	if !ok {
		return nil, nil
	}
	return &r, nil
}

// Open launches the plugin of a plugin block (or returns the one already
// running) and learns what it offers. Before anything runs, the binary must
// exist, be executable and match its pinned sha256; errors are *LoadError
// values naming the plugin block (internal/explain reports on them).
func (m *Manager) Open(ctx context.Context, pc *config.Plugin) (*Plugin, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	if p := m.plugins[pc.Name]; p != nil {
		m.mu.Unlock()
		return p, nil
	}
	if op := m.opening[pc.Name]; op != nil {
		// Another goroutine is launching it (filters load concurrently):
		// share its result rather than start a second process.
		m.mu.Unlock()
		select {
		case <-op.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if op.err != nil {
			return nil, op.err
		}
		return m.Open(ctx, pc)
	}
	op := &opening{done: make(chan struct{})}
	m.opening[pc.Name] = op
	m.mu.Unlock()
	p, err := m.open(ctx, pc)
	op.err = err
	m.mu.Lock()
	delete(m.opening, pc.Name)
	m.mu.Unlock()
	close(op.done)
	return p, err
}

// open launches pc; Open makes sure one runs at a time per plugin.
func (m *Manager) open(ctx context.Context, pc *config.Plugin) (*Plugin, error) {

	spec := launchSpec{
		name:     pc.Name,
		path:     pc.Path,
		versions: HostProtocolVersions,
		timeout:  m.opts.StartTimeout,
		log:      m.log,
		environ:  m.opts.Environ(),
	}
	ra, err := m.reattachFor(pc.Name)
	if err != nil {
		return nil, launchFailed(pc, &LoadError{Plugin: pc.Name, Path: pc.Path, Kind: LoadReattach, Err: err}, "")
	}
	if ra != nil {
		m.log.Warn("attaching to a running plugin from "+pb.ReattachEnv+"; its checksum is not verified", "plugin", pc.Name, "pid", ra.Pid)
		spec.reattach = ra
	} else {
		if kind, err := checkExecutable(pc.Path); err != nil {
			return nil, launchFailed(pc, &LoadError{Plugin: pc.Name, Path: pc.Path, Kind: kind, Err: err}, "")
		}
		switch {
		case pc.SHA256 == "":
			sum, err := fileSHA256(pc.Path)
			if err != nil {
				return nil, launchFailed(pc, &LoadError{Plugin: pc.Name, Path: pc.Path, Kind: LoadNotExecutable, Err: err}, "")
			}
			if !m.opts.InsecureSkipChecksum {
				return nil, launchFailed(pc, &LoadError{Plugin: pc.Name, Path: pc.Path, Kind: LoadChecksumMissing}, sum)
			}
			m.log.Warn("INSECURE: running plugin "+strconv.Quote(pc.Name)+" without checksum verification; anyone who can replace "+pc.Path+" can run code as you. Pin it with sha256 = \""+sum+"\"", "plugin", pc.Name)
		default:
			// The binary is hashed once per start, by the runner, right
			// before exec (go-plugin's SecureConfig): a mismatch means it
			// never runs. Hashing it here as well would double the cost of
			// every start (tens of milliseconds for a 20 MB binary).
			want, err := checksum(pc.SHA256)
			if err != nil {
				return nil, launchFailed(pc, &LoadError{Plugin: pc.Name, Path: pc.Path, Kind: LoadChecksumMismatch, Err: err}, "")
			}
			spec.sha256 = want
		}
	}

	p := &Plugin{m: m, cfg: *pc, spec: spec}
	if _, err := p.get(ctx); err != nil {
		p.close()
		if le, ok := err.(*LoadError); ok {
			sum := ""
			if le.Kind == LoadChecksumMismatch {
				sum, _ = fileSHA256(pc.Path) // for the message: what to pin if the change is trusted
			}
			return nil, launchFailed(pc, le, sum)
		}
		return nil, err
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		go p.close()
		return nil, ErrClosed
	}
	if q := m.plugins[pc.Name]; q != nil { // opened concurrently
		go p.close()
		return q, nil
	}
	m.plugins[pc.Name] = p
	return p, nil
}

// Transport opens the transport plugin of server s (s.Plugin != nil) from
// cfg's plugin blocks and validates s's plugin config.
func (m *Manager) Transport(ctx context.Context, cfg *config.Config, s *config.Server) (*Transport, error) {
	if s.Plugin == nil {
		return nil, fmt.Errorf("server %q does not use a transport plugin", s.Name)
	}
	pc := cfg.Plugin(s.Plugin.Name)
	if pc == nil {
		return nil, &UnknownError{Plugin: s.Plugin.Name, Server: s.Name, Source: s.Source}
	}
	p, err := m.Open(ctx, pc)
	if err != nil {
		return nil, err
	}
	return p.Transport(s)
}

// Filter opens the plugin of filter f (f.Plugin != "") from cfg's plugin
// blocks and returns its policy.Link, configured with f's config.
func (m *Manager) Filter(ctx context.Context, cfg *config.Config, f *config.Filter) (*Link, error) {
	pc := cfg.Plugin(f.Plugin)
	if pc == nil {
		return nil, &UnknownError{Plugin: f.Plugin, Filter: f.Name, Source: f.Source}
	}
	p, err := m.Open(ctx, pc)
	if err != nil {
		return nil, err
	}
	return p.Filter(ctx, f)
}

// Checked is what Check found for one plugin block in use.
type Checked struct {
	Plugin  string
	Configs int     // configs (filters' and servers') that match its schemas
	Errs    []error // each failing config (a *ConfigError naming its source), or why the plugin could not start (a *CheckError)
}

// Check starts every plugin that cfg's filters and servers use, as any
// launch does (checksum first), and checks each of their configs against
// the plugin's own schema, without configuring an instance or opening a
// session. It is what nexus config validate runs; plugins unused by any
// filter or server are not started.
func (m *Manager) Check(ctx context.Context, cfg *config.Config) []Checked {
	var out []Checked
	for _, pc := range cfg.Plugins {
		var filters []*config.Filter
		var servers []*config.Server
		for _, f := range cfg.Filters {
			if f.Plugin == pc.Name {
				filters = append(filters, f)
			}
		}
		for _, s := range cfg.Servers {
			if s.Plugin != nil && s.Plugin.Name == pc.Name && s.Enabled {
				servers = append(servers, s)
			}
		}
		if len(filters)+len(servers) == 0 {
			continue
		}
		c := Checked{Plugin: pc.Name}
		p, err := m.Open(ctx, pc)
		if err != nil {
			c.Errs = append(c.Errs, &CheckError{Plugin: pc.Name, Source: pc.Source, Err: err})
			out = append(out, c)
			continue
		}
		for _, f := range filters {
			if _, _, err := p.checkFilter(f); err != nil {
				c.Errs = append(c.Errs, err)
			} else {
				c.Configs++
			}
		}
		for _, s := range servers {
			if _, err := p.Transport(s); err != nil {
				c.Errs = append(c.Errs, err)
			} else {
				c.Configs++
			}
		}
		out = append(out, c)
	}
	return out
}

// Close stops every plugin process (gracefully, then by force) and waits
// for them. It is safe to call more than once.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	ps := m.plugins
	m.plugins = map[string]*Plugin{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.close()
		}()
	}
	wg.Wait()
	return nil
}

// CleanupAll kills every plugin process any Manager in this process
// started (go-plugin's CleanupClients). Call it once, deferred in main, as
// the last line of defence on the way out; Manager.Close is the orderly way.
func CleanupAll() { goplugin.CleanupClients() }
