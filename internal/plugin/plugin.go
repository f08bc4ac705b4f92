package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/status"

	"github.com/nexus-mcp/nexus/internal/config"
)

// Info is what a plugin binary offers.
type Info struct {
	Path             string
	SHA256           string
	Name             string // as the author set it; may be empty
	Version          string
	Kinds            []string // transport, policy, sanitizer
	ProtocolVersion  int      // the version host and plugin agreed on
	ProtocolVersions []int    // every version the plugin speaks
	EventABI         int
	Schemas          map[string]json.RawMessage // config schema by kind

	schemas map[string]*schema
}

// Has reports whether the plugin serves kind.
func (i Info) Has(kind string) bool {
	for _, k := range i.Kinds {
		if k == kind {
			return true
		}
	}
	return false
}

// ErrClosed is returned by a Plugin whose Manager was closed.
var ErrClosed = errors.New("plugin: the plugin manager is closed")

// Plugin is one configured plugin: a supervised process that is restarted
// with backoff when it crashes. Its methods are safe for concurrent use.
type Plugin struct {
	m    *Manager
	cfg  config.Plugin
	spec launchSpec

	mu       sync.Mutex
	cur      *instance
	starting chan struct{} // closed when the start in progress ends
	gen      uint64
	crashes  int // consecutive crashes and failed restarts
	next     time.Time
	lastErr  error
	closed   bool
	info     Info
	restart  *time.Timer
}

// Name is the plugin block's name.
func (p *Plugin) Name() string { return p.cfg.Name }

// Info says what the plugin offers (as of its first start).
func (p *Plugin) Info() Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info
}

// backoff is the delay before restart number n (1-based): min doubling to max.
func (p *Plugin) backoff(n int) time.Duration {
	d := p.m.opts.RestartBackoff
	for i := 1; i < n && d < p.m.opts.MaxRestartBackoff; i++ {
		d *= 2
	}
	return min(d, p.m.opts.MaxRestartBackoff)
}

// maxRestartWait is how long a call waits for a restart that is due soon;
// further away, it fails at once with the reason the plugin is down.
const maxRestartWait = 2 * time.Second

// stableAfter is how long a process must run before its crash counts as a
// first crash again.
const stableAfter = time.Minute

// get returns the running instance, starting or restarting it if needed.
func (p *Plugin) get(ctx context.Context) (*instance, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		if p.cur != nil {
			if !p.cur.dead() {
				inst := p.cur
				p.mu.Unlock()
				return inst, nil
			}
			p.reapLocked(p.cur)
		}
		if ch := p.starting; ch != nil {
			p.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if wait := time.Until(p.next); wait > 0 {
			last := p.lastErr
			n := p.crashes
			p.mu.Unlock()
			if wait > maxRestartWait {
				return nil, &DownError{Plugin: p.cfg.Name, Failures: n, RetryIn: wait, Err: last}
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
		}
		ch := make(chan struct{})
		p.starting = ch
		p.gen++
		gen := p.gen
		p.mu.Unlock()

		inst, err := launch(ctx, p.spec)

		p.mu.Lock()
		p.starting = nil
		close(ch)
		if err != nil {
			p.crashes++
			p.next = time.Now().Add(p.backoff(p.crashes))
			p.lastErr = err
			p.mu.Unlock()
			return nil, err
		}
		inst.gen = gen
		if p.closed {
			p.mu.Unlock()
			inst.kill()
			return nil, ErrClosed
		}
		p.cur = inst
		if p.info.Kinds == nil {
			p.info = inst.info
			p.info.Path = p.cfg.Path
			p.info.SHA256 = p.cfg.SHA256
		}
		p.mu.Unlock()
		go p.supervise(inst)
		return inst, nil
	}
}

// supervise waits for inst to end and records it.
func (p *Plugin) supervise(inst *instance) {
	<-inst.exited
	p.mu.Lock()
	p.reapLocked(inst)
	p.mu.Unlock()
}

// reapLocked records the end of the current instance, whoever notices it
// first (supervise, or a call that finds it dead): a crash counts toward
// the backoff and schedules a restart, so a policy plugin is back before
// its next call. p.mu is held.
func (p *Plugin) reapLocked(inst *instance) {
	if p.closed || p.cur != inst {
		return
	}
	p.cur = nil
	if inst.wasKilled() {
		return
	}
	crash := inst.crashError("")
	if time.Since(inst.started) > stableAfter {
		p.crashes = 0
	}
	p.crashes++
	delay := p.backoff(p.crashes)
	p.next = time.Now().Add(delay)
	p.lastErr = crash
	p.m.log.Error("plugin crashed; restarting", "plugin", p.cfg.Name, "exit", crash.Exit, "stderr", tail(crash.Stderr), "restart_in", delay)
	p.restart = time.AfterFunc(delay, func() {
		ctx, cancel := context.WithTimeout(context.Background(), p.m.opts.StartTimeout+time.Second)
		defer cancel()
		if _, err := p.get(ctx); err != nil && !errors.Is(err, ErrClosed) {
			p.m.log.Error("plugin restart failed; the next use retries", "plugin", p.cfg.Name, "error", err)
		}
	})
}

// close stops the process for good.
func (p *Plugin) close() {
	p.mu.Lock()
	p.closed = true
	inst := p.cur
	p.cur = nil
	if p.restart != nil {
		p.restart.Stop()
	}
	ch := p.starting
	p.mu.Unlock()
	if ch != nil {
		<-ch // a start in progress sees closed and kills what it started
	}
	if inst != nil {
		inst.kill()
	}
}

// DownError is a call made while a crashed plugin waits for its restart.
type DownError struct {
	Plugin   string
	Failures int
	RetryIn  time.Duration
	Err      error
}

func (e *DownError) Error() string {
	return "plugin " + strconv.Quote(e.Plugin) + " is down after " + strconv.Itoa(e.Failures) +
		" failure(s); next restart in " + e.RetryIn.Round(time.Millisecond).String() + "; last error: " + errText(e.Err)
}

func (e *DownError) Unwrap() error { return e.Err }

func errText(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}

// grpcMessage is the text of a gRPC error without the "rpc error: code =
// ... desc =" wrapping, which means nothing to a person.
func grpcMessage(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}

// validate checks a config against the kind's schema.
func (p *Plugin) validate(kind string, cfg json.RawMessage) ([]string, error) {
	p.mu.Lock()
	sc := p.info.schemas[kind]
	p.mu.Unlock()
	return sc.validate(cfg)
}

// kindErr says the plugin does not serve kind.
func (p *Plugin) kindErr(kind string) error {
	return fmt.Errorf("plugin %q does not serve the %s kind (it serves: %v)", p.cfg.Name, kind, p.Info().Kinds)
}
