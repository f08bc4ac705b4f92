package wasm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
)

// Options configure a Runtime. The zero value is usable.
type Options struct {
	// CacheDir holds compiled modules between runs, so a filter loads in
	// milliseconds after its first use. "" means DefaultCacheDir(); a
	// directory that cannot be created falls back to an in-memory cache.
	CacheDir string
	// NoCache compiles every module afresh and keeps nothing on disk.
	NoCache bool
	// Logger receives what filters log (their log calls, stdout and
	// stderr), tagged with the filter's name. nil discards it.
	Logger hclog.Logger
	// Session is the id filters get from the "session" field: the same for
	// every call of this runtime. "" makes an unguessable random one. Set it
	// to keep markers stable across runtimes (tests, a gateway session).
	Session string
	// LogLimit caps what one call (or one instance start) may log, in bytes,
	// across log, stdout and stderr; the rest is dropped and counted.
	// 0 means 64 KiB.
	LogLimit int
}

// DefaultLogLimit is the default of Options.LogLimit.
const DefaultLogLimit = 64 << 10

// DefaultCacheDir is where compiled modules are kept by default:
// nexus/wasm under the user's cache directory (~/.cache/nexus/wasm on
// Linux, unless XDG_CACHE_HOME says otherwise).
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "nexus", "wasm"), nil
}

// Runtime loads and runs WASM filters. One Runtime serves every filter of
// a host; each filter gets its own sandbox (a wazero runtime with its
// memory limit) and its own pool of instances, and all share the
// compilation cache.
type Runtime struct {
	cache    wazero.CompilationCache
	cacheDir string
	logger   hclog.Logger
	session  string
	logLimit int

	mu      sync.Mutex
	filters []*Filter
	closed  bool
	// loads counts Load and Inspect calls in progress: Close waits for
	// them, since closing the compilation cache under a module being
	// compiled or instantiated crashes wazero.
	loads sync.WaitGroup

	// compiling holds a lock per module being compiled. wazero v1.12
	// publishes a module read from the file cache to other compilations
	// before its entry preambles exist, so two concurrent compilations of
	// the same module can instantiate a half-made one and crash
	// (index out of range in moduleEngine.NewFunction). Different modules
	// still compile in parallel.
	compilingMu sync.Mutex
	compiling   map[[32]byte]*compileLock
}

type compileLock struct {
	sync.Mutex
	users int
}

// lockCompile serializes compilations of the module whose code hashes to
// id; call the returned func when done.
func (r *Runtime) lockCompile(id [32]byte) (unlock func()) {
	r.compilingMu.Lock()
	if r.compiling == nil {
		r.compiling = map[[32]byte]*compileLock{}
	}
	l := r.compiling[id]
	if l == nil {
		l = &compileLock{}
		r.compiling[id] = l
	}
	l.users++
	r.compilingMu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		r.compilingMu.Lock()
		if l.users--; l.users == 0 {
			delete(r.compiling, id)
		}
		r.compilingMu.Unlock()
	}
}

// NewRuntime makes a Runtime.
func NewRuntime(ctx context.Context, opts Options) (*Runtime, error) {
	r := &Runtime{logger: opts.Logger, session: opts.Session, logLimit: opts.LogLimit}
	if r.logger == nil {
		r.logger = hclog.NewNullLogger()
	}
	if r.logLimit <= 0 {
		r.logLimit = DefaultLogLimit
	}
	if r.session == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("wasm: making a session id: %w", err)
		}
		r.session = hex.EncodeToString(b[:])
	}
	if opts.NoCache {
		return r, nil
	}
	dir := opts.CacheDir
	if dir == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			r.logger.Warn("no user cache directory; WASM filters are compiled in memory on every run", "error", err)
		}
		dir = d
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			r.logger.Warn("cannot create the WASM compilation cache; filters are compiled in memory on every run", "dir", dir, "error", err)
			dir = ""
		}
	}
	if dir != "" {
		c, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			r.logger.Warn("cannot use the WASM compilation cache; filters are compiled in memory on every run", "dir", dir, "error", err)
		} else {
			r.cache, r.cacheDir = c, dir
		}
	}
	if r.cache == nil {
		r.cache = wazero.NewCompilationCache()
	}
	return r, nil
}

// CacheDir is the directory of the compilation cache, or "" when compiled
// code is kept in memory only.
func (r *Runtime) CacheDir() string { return r.cacheDir }

// Session is the session id filters see.
func (r *Runtime) Session() string { return r.session }

// ErrClosed is returned by a closed Runtime or Filter.
var ErrClosed = errors.New("wasm runtime closed")

// Close closes every filter loaded by r and the compilation cache. Calls in
// flight fail.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.loads.Wait()
	r.mu.Lock()
	fs := r.filters
	r.filters = nil
	r.mu.Unlock()
	var errs []error
	for _, f := range fs {
		errs = append(errs, f.Close(ctx))
	}
	if r.cache != nil {
		errs = append(errs, r.cache.Close(ctx))
	}
	return errors.Join(errs...)
}

// begin registers a Load or Inspect, unless r is closed; end it with
// r.loads.Done.
func (r *Runtime) begin() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.loads.Add(1)
	return true
}

func (r *Runtime) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

func (r *Runtime) add(f *Filter) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	r.filters = append(r.filters, f)
	return nil
}

func (r *Runtime) remove(f *Filter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, g := range r.filters {
		if g == f {
			r.filters = append(r.filters[:i], r.filters[i+1:]...)
			return
		}
	}
}
