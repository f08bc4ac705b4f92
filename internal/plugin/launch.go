package plugin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/nexus-mcp/nexus/internal/proc"
	"github.com/nexus-mcp/nexus/internal/transport/stdio"
)

// procRunner runs a plugin binary for go-plugin. go-plugin's own runner
// hands the child the host's stdin, which in gateway mode carries an MCP
// stream; this one gives it /dev/null, the sanitized environment, its own
// process group, and does not exec until the checksum check (go-plugin's
// SecureConfig, see verifyChecksum) has passed.
type procRunner struct {
	name     string
	path     string
	verified <-chan verified // the checksum check's outcome; nil: not checked (an explicit, logged choice)
	after    func()          // releases what the verified binary needed once it has run
	cmd      *exec.Cmd
	grp      *proc.Group // set by Start
	stdout   io.ReadCloser
	stderr   io.ReadCloser

	exited  chan struct{}
	mu      sync.Mutex
	waitErr error
	pid     int
}

var _ runner.Runner = (*procRunner)(nil)

func newProcRunner(name, path string, verified <-chan verified, env []string, pluginEnv []string) (*procRunner, error) {
	cmd := exec.Command(path)
	cmd.Env = append(append([]string{}, env...), pluginEnv...)
	cmd.Stdin = nil // /dev/null: a plugin never reads the host's stdin
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	return &procRunner{name: name, path: path, verified: verified, cmd: cmd, stdout: stdout, stderr: stderr, exited: make(chan struct{})}, nil
}

func (r *procRunner) Start(ctx context.Context) error {
	if r.verified != nil {
		var v verified
		select {
		case v = <-r.verified:
		case <-ctx.Done():
			go func() { (<-r.verified).release() }()
			v.err = fmt.Errorf("timeout while waiting for plugin to start: its checksum was still being verified (%w)", ctx.Err())
		}
		if v.err != nil {
			v.release()
			close(r.exited) // it never ran: nothing to wait for
			return v.err
		}
		// Run the very bytes that were hashed, not whatever the path
		// names by now (see verifyChecksum).
		r.cmd.Path = v.exec
		defer v.closeAfterStart()
		r.after = v.cleanup
	}
	grp, err := proc.Start(r.cmd)
	if err != nil {
		if r.after != nil {
			r.after()
		}
		close(r.exited)
		return err
	}
	r.grp, r.pid = grp, grp.PID()
	return nil
}

// Wait reaps the plugin; whatever it spawned goes with it.
func (r *procRunner) Wait(context.Context) error {
	if r.grp == nil {
		return errors.New("plugin process was never started")
	}
	err := r.grp.Wait()
	if r.after != nil {
		r.after()
	}
	r.mu.Lock()
	r.waitErr = err
	r.mu.Unlock()
	select {
	case <-r.exited:
	default:
		close(r.exited)
	}
	return err
}

// exitText says how the process ended ("exit status 2", "signal: killed").
func (r *procRunner) exitText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waitErr != nil {
		return r.waitErr.Error()
	}
	if ps := r.cmd.ProcessState; ps != nil {
		return ps.String()
	}
	return ""
}

// Kill kills the plugin and everything it spawned.
func (r *procRunner) Kill(context.Context) error {
	if r.grp != nil {
		r.grp.Kill()
	}
	return nil
}

func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }

// Stderr is what go-plugin reads the plugin's log lines from, guarded
// (see guardLogLines). go-plugin calls it once, after Start.
func (r *procRunner) Stderr() io.ReadCloser { return guardLogLines(r.stderr) }

// Name tags the plugin's log lines: go-plugin logs them through
// Logger.Named(Name()).
func (r *procRunner) Name() string { return r.name }

func (r *procRunner) ID() string {
	if r.pid == 0 {
		return ""
	}
	return strconv.Itoa(r.pid)
}

func (r *procRunner) Diagnose(context.Context) string { return "" }

func (r *procRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (r *procRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

// pluginEnv is the environment a plugin starts with: the SafeEnvKeys the
// stdio transport also passes, taken from the host, and nothing else. The
// host's environment routinely holds tokens; a plugin that needs a value
// gets it through its config.
func pluginEnv(environ []string) []string {
	allowed := map[string]bool{}
	for _, k := range stdio.SafeEnvKeys {
		allowed[foldKey(k)] = true
	}
	env := []string{}
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if ok && k != "" && allowed[foldKey(k)] {
			env = append(env, kv)
		}
	}
	return env
}

func foldKey(k string) string {
	if runtime.GOOS == "windows" {
		return strings.ToUpper(k)
	}
	return k
}

// verified is the outcome of a checksum check: on success, what to
// execute so that the bytes that run are the bytes that were hashed.
type verified struct {
	err  error
	exec string // the path to execute
	// keep is held open until the process has started (Linux: exec
	// is the descriptor's /proc/self/fd path); cleanup runs once the
	// process has ended (elsewhere: the private copy is removed).
	keep    *os.File
	cleanup func()
}

func (v verified) closeAfterStart() {
	if v.keep != nil {
		v.keep.Close()
	}
}

// release drops a check's outcome that will never be executed.
func (v verified) release() {
	v.closeAfterStart()
	if v.cleanup != nil {
		v.cleanup()
	}
}

// verifyChecksum checks the binary at path against sum, in the
// background, and keeps hold of exactly what it hashed: a binary swapped
// in at the path between the check and the exec must not run unverified.
// On Linux the open file is hashed and then executed through its
// descriptor (/proc/self/fd/N); elsewhere, and for scripts, the bytes are
// hashed while they are copied to a private directory, and the copy is
// executed.
func verifyChecksum(path string, sum []byte) <-chan verified {
	ch := make(chan verified, 1)
	go func() { ch <- hashForExec(path, sum) }()
	return ch
}

func hashForExec(path string, sum []byte) verified {
	f, err := os.Open(path)
	if err != nil {
		return verified{err: fmt.Errorf("error verifying checksum: %w", err)}
	}
	h := sha256.New()
	var src io.Reader = f
	v := verified{}
	// A script's interpreter opens the path it is given after the exec,
	// when the descriptor is closed: scripts get the private copy too.
	var magic [2]byte
	n, _ := io.ReadFull(f, magic[:])
	script := n == 2 && string(magic[:]) == "#!"
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return verified{err: fmt.Errorf("error verifying checksum: %w", err)}
	}
	if runtime.GOOS == "linux" && !script {
		v.keep, v.exec = f, "/proc/self/fd/"+strconv.Itoa(int(f.Fd()))
	} else {
		defer f.Close()
		dir, err := os.MkdirTemp("", "nexus-plugin-")
		if err != nil {
			return verified{err: fmt.Errorf("error verifying checksum: making a private copy: %w", err)}
		}
		v.cleanup = func() { os.RemoveAll(dir) }
		v.exec = filepath.Join(dir, filepath.Base(path))
		dst, err := os.OpenFile(v.exec, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o500)
		if err != nil {
			v.release()
			return verified{err: fmt.Errorf("error verifying checksum: making a private copy: %w", err)}
		}
		defer dst.Close()
		src = io.TeeReader(f, dst)
	}
	if _, err := io.Copy(h, src); err != nil {
		v.release()
		return verified{err: fmt.Errorf("error verifying checksum: %w", err)}
	}
	if !hmacEqual(h.Sum(nil), sum) {
		v.release()
		return verified{err: goplugin.ErrChecksumsDoNotMatch}
	}
	return v
}

func hmacEqual(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }

// fileSHA256 returns the lower-case hex sha256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// checkExecutable classifies a path before anything runs.
func checkExecutable(path string) (LoadErrorKind, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return LoadNotFound, err
	case err != nil:
		return LoadNotExecutable, err
	case fi.IsDir():
		return LoadNotExecutable, errors.New("it is a directory")
	case !fi.Mode().IsRegular():
		return LoadNotExecutable, errors.New("it is not a regular file")
	case runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0:
		return LoadNotExecutable, errors.New("it has no execute permission (mode " + fi.Mode().Perm().String() + ")")
	}
	return 0, nil
}

// classifyStart maps go-plugin's start errors, which are plain strings, to
// kinds a person can act on.
func classifyStart(err error, exited bool) LoadErrorKind {
	msg := err.Error()
	switch {
	case errors.Is(err, goplugin.ErrChecksumsDoNotMatch):
		return LoadChecksumMismatch
	case errors.Is(err, fs.ErrNotExist):
		return LoadNotFound
	case errors.Is(err, fs.ErrPermission):
		return LoadNotExecutable
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return LoadTimeout
	case strings.Contains(msg, "incompatible API version"), strings.Contains(msg, "incompatible core API version"):
		return LoadVersion
	case strings.Contains(msg, "Unrecognized remote plugin message"):
		if strings.Contains(msg, "Failed to read any lines") {
			return LoadExited
		}
		return LoadNotAPlugin
	case strings.Contains(msg, "unsupported plugin protocol"):
		return LoadNotAPlugin
	case strings.Contains(msg, "plugin exited before we could connect"), exited:
		return LoadExited
	}
	return LoadOther
}

// cleanStartError trims go-plugin's multi-paragraph messages to their first
// line, which is what a person needs; the rest repeats generic advice.
func cleanStartError(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "\n"); i >= 0 {
		first := msg[:i]
		if strings.HasPrefix(first, "Unrecognized remote plugin message: ") {
			line := strings.TrimPrefix(first, "Unrecognized remote plugin message: ")
			return fmt.Errorf("its first line on stdout was %q, not a handshake", line)
		}
		return errors.New(first)
	}
	if strings.HasPrefix(msg, "Unrecognized remote plugin message: ") {
		return fmt.Errorf("its first line on stdout was %q, not a handshake", strings.TrimPrefix(msg, "Unrecognized remote plugin message: "))
	}
	return err
}

// pluginLogger is the logger of one plugin: "<host>.plugin", with the
// plugin's name as a field; go-plugin re-emits the plugin's own lines
// through it as "<host>.plugin.<name>".
func pluginLogger(base hclog.Logger, name string) hclog.Logger {
	if base == nil {
		base = hclog.NewNullLogger()
	}
	if !strings.HasSuffix(base.Name(), "plugin") { // a logger already named for plugins stays as it is
		base = base.Named("plugin")
	}
	return base.With("plugin", name)
}
