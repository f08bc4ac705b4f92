package stdio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/proc"
)

const (
	defaultCloseGrace  = 2 * time.Second
	defaultStderrLines = 20

	// exitWait bounds how long a reader waits, once stdout has ended, for the
	// exit status and the last stderr lines, and how long after the exit an
	// escaped descendant holding a pipe open may delay the final read.
	exitWait = 2 * time.Second

	maxNoiseLogs  = 10 // noise lines logged before going quiet
	noiseRingSize = 10 // noise lines kept for ExitError
)

// Config describes one server process.
type Config struct {
	Server  string   // server name, used in errors and log lines
	Command []string // executable followed by its args (already merged from command+args)
	// Options are what a config sets (OptionTable decodes them). Env and
	// FileEnv are merged by Options.Environ; EnvFile itself is not read
	// again.
	Options
	Logger      hclog.Logger    // nil = hclog.NewNullLogger()
	MaxFrame    int             // default mcp.MaxFrameSize (10 MiB)
	CloseGrace  time.Duration   // default 2s: wait after closing stdin before SIGTERM to the group, and again before SIGKILL
	StderrLines int             // default 20: size of the stderr ring buffer
	HostEnviron func() []string // source of the host environment; default os.Environ (tests inject)
}

// stdoutReader is the host's end of the server's stdout (see stdoutPipe).
type stdoutReader interface {
	io.ReadCloser
	SetReadDeadline(time.Time) error
}

// awaiter is a stdoutReader with a faster way to wait for a reply that is
// expected soon (see pollpipe.Reader.Await).
type awaiter interface{ Await(deadline time.Time) }

// Conn is a running server process speaking newline-delimited JSON-RPC on
// its stdin and stdout.
type Conn struct {
	server   string
	command  []string
	log      hclog.Logger
	grace    time.Duration
	maxFrame int

	cmd *exec.Cmd
	grp *proc.Group // the server and everything it spawns
	pid int

	stdin, stderr *os.File
	stdout        stdoutReader

	frames     *frameReader // owned by the single ReadMessage goroutine
	noiseCount int          // ditto

	// Deadlines on stdout, for direct reads (mcp.DirectReader) and the
	// bound on reads after the exit.
	directOK bool // stdout supports deadlines (set at start)
	rd       *mcp.ReadDeadline
	await    awaiter // nil: direct reads wait like any other

	writeMu  sync.Mutex
	writeBuf []byte
	quick    quickWriter // writes what the pipe takes at once (writeMu)
	grown    int         // pipes grown to pipeSize, given back at Close

	exited   chan struct{} // closed after exitCode/exitSig are set
	exitCode int
	exitSig  string

	stderrDone chan struct{}
	stderrRing *ring
	noiseRing  *ring

	closing   atomic.Bool
	closeOnce sync.Once

	fatalMu sync.Mutex
	fatal   error // sticky: the byte stream can no longer be trusted
}

var (
	_ mcp.Conn          = (*Conn)(nil)
	_ mcp.DirectReader  = (*Conn)(nil)
	_ mcp.FrameOwner    = (*Conn)(nil)
	_ mcp.FrameBufferer = (*Conn)(nil)
)

// Start launches the server. ctx bounds only the start itself; the process
// lives until Close or until it exits on its own.
func Start(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = mcp.MaxFrameSize
	}
	if cfg.CloseGrace <= 0 {
		cfg.CloseGrace = defaultCloseGrace
	}
	if cfg.StderrLines <= 0 {
		cfg.StderrLines = defaultStderrLines
	}
	if cfg.HostEnviron == nil {
		cfg.HostEnviron = os.Environ
	}
	command := slices.Clone(cfg.Command)
	fail := func(kind StartErrorKind, path string, err error) (*Conn, error) {
		return nil, &StartError{Server: cfg.Server, Command: command, Path: path, Kind: kind, Err: err}
	}
	if len(command) == 0 || command[0] == "" {
		return fail(Other, "", errors.New("no command configured"))
	}

	env, err := buildEnv(cfg.HostEnviron(), cfg.EnvPassthrough, cfg.Options.Environ(), foldEnvCase)
	if err != nil {
		return fail(Other, "", err)
	}
	pathSeen := lookupEnv(env, "PATH", foldEnvCase)
	if cfg.Cwd != "" {
		fi, err := os.Stat(cfg.Cwd)
		if err == nil && !fi.IsDir() {
			err = &fs.PathError{Op: "chdir", Path: cfg.Cwd, Err: syscall.ENOTDIR}
		}
		if err != nil {
			return fail(BadDir, pathSeen, err)
		}
	}
	path, kind, err := resolveCommand(command[0], cfg.Cwd, env)
	if err != nil {
		return fail(kind, pathSeen, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(Other, pathSeen, err)
	}

	// Our own pipes rather than cmd.StdoutPipe: Wait would close those read
	// ends while a reader may still be draining them.
	var files []io.Closer
	closeAll := func() {
		for _, f := range files {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File) {
		if err != nil {
			return nil, nil
		}
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w
	}
	inR, inW := pipe()
	errR, errW := pipe()
	var outR stdoutReader
	var outW *os.File
	if err == nil {
		if outR, outW, err = stdoutPipe(); err == nil {
			files = append(files, outR, outW)
		}
	}
	if err != nil {
		closeAll()
		return fail(Other, pathSeen, err)
	}

	cmd := &exec.Cmd{
		Path:   path,
		Args:   command,
		Env:    env, // never nil: a nil Env would hand over the whole host environment
		Dir:    cfg.Cwd,
		Stdin:  inR,
		Stdout: outW,
		Stderr: errW,
	}
	grp, err := proc.Start(cmd)
	if err != nil {
		closeAll()
		switch {
		case errors.Is(err, fs.ErrPermission):
			return fail(PermissionDenied, pathSeen, err)
		case errors.Is(err, fs.ErrNotExist) && runtime.GOOS != "windows":
			// The file was just found, so the missing piece is its #! interpreter.
			return fail(Other, pathSeen, fmt.Errorf("%w (the file exists, so the interpreter named on its #! line is probably missing)", err))
		case errors.Is(err, fs.ErrNotExist):
			return fail(NotFound, pathSeen, err)
		default:
			return fail(Other, pathSeen, err)
		}
	}
	grown := growPipes(inW, outW)
	// The child holds its ends now; keeping ours open would hide its EOFs.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()

	c := &Conn{
		server:     cfg.Server,
		command:    command,
		log:        cfg.Logger.With("server", cfg.Server),
		grace:      cfg.CloseGrace,
		maxFrame:   cfg.MaxFrame,
		cmd:        cmd,
		grp:        grp,
		pid:        cmd.Process.Pid,
		stdin:      inW,
		grown:      grown,
		stdout:     outR,
		stderr:     errR,
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
		stderrRing: newRing(cfg.StderrLines),
		noiseRing:  newRing(noiseRingSize),
	}
	c.quick.init(inW)
	c.frames = newFrameReader(outR, frameBufSize, cfg.MaxFrame, c.onNoise)
	c.directOK = outR.SetReadDeadline(time.Time{}) == nil
	c.rd = mcp.NewReadDeadline(outR.SetReadDeadline)
	c.await, _ = outR.(awaiter)
	go c.wait()
	go c.readStderr()
	c.log.Debug("server started", "pid", c.pid, "command", path)
	return c, nil
}

// PID returns the server's process id (also its process group id on Unix).
func (c *Conn) PID() int { return c.pid }

// Stderr returns a copy of the last stderr lines, oldest first.
func (c *Conn) Stderr() []string { return c.stderrRing.snapshot() }

// Exited is closed once the server process has exited and been reaped.
func (c *Conn) Exited() <-chan struct{} { return c.exited }

// ExitCode returns the exit code (-1 if a signal ended the process) and
// true, once the process has exited.
func (c *Conn) ExitCode() (int, bool) {
	select {
	case <-c.exited:
		return c.exitCode, true
	default:
		return 0, false
	}
}

// ReadMessage returns the next JSON-RPC frame; see mcp.Conn.
func (c *Conn) ReadMessage() ([]byte, error) {
	if err := c.fatalErr(); err != nil {
		return nil, err
	}
	if c.closing.Load() {
		return nil, mcp.ErrClosed
	}
	if c.directOK {
		// A direct read may have left its deadline: this read has none,
		// except the one that bounds reads after the exit.
		c.rd.Clear()
	}
	frame, err := c.frames.next()
	if err == nil {
		return frame, nil
	}
	return nil, c.readFailed(err)
}

// FrameBuffered reports whether the next line is buffered whole and
// starts a frame, so ReadMessage returns without waiting; see
// mcp.FrameBufferer.
func (c *Conn) FrameBuffered() bool { return c.frames.frameBuffered() }

// FrameOwned reports whether the frame just read is the caller's to keep;
// see mcp.FrameOwner.
func (c *Conn) FrameOwned() bool { return c.frames.owned }

// DirectReads reports whether stdout supports deadlines; see
// mcp.DirectReader.
func (c *Conn) DirectReads() bool { return c.directOK }

// ReadMessageBefore returns the next frame if it arrives before deadline;
// see mcp.DirectReader. The part of a frame that has come moves to the
// frame's collector before a wait, so a timeout loses nothing and the
// next read goes on with the frame; a read error and anything after the
// exit are left to ReadMessage.
func (c *Conn) ReadMessageBefore(deadline time.Time) ([]byte, error) {
	if !c.directOK || c.closing.Load() || c.fatalErr() != nil {
		return nil, mcp.ErrNotDirect
	}
	for {
		switch c.frames.buffered() {
		case lineBuffered:
			frame, err := c.frames.line() // reads nothing more
			if err != nil {
				return nil, c.readFailed(err)
			}
			if frame != nil {
				return frame, nil
			}
			continue // a blank or noise line
		case partBuffered:
			// A frame that has partly come (a large one, usually): that
			// part moves aside and the wait below is for the rest, on
			// this goroutine too (handing it to a reader of its own costs
			// a wake-up on every large reply).
			frame, err := c.frames.gather()
			if err != nil {
				return nil, c.readFailed(err)
			}
			if !frame {
				return nil, mcp.ErrNotDirect // noise: ReadMessage skips it
			}
			continue
		}
		if err := c.rd.Arm(deadline); err != nil {
			return nil, err
		}
		if c.await != nil {
			c.await.Await(deadline)
		}
		frame, err := c.frames.more()
		if errors.Is(err, errFrameTooLarge) {
			return nil, c.readFailed(err)
		}
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) || c.rd.TimedOut() {
				// A read error, or the bound after the exit:
				// ReadMessage reports why the server went away.
				return nil, mcp.ErrNotDirect
			}
			return nil, mcp.ErrReadTimeout
		}
		if frame != nil {
			return frame, nil
		}

	}
}

// InterruptRead makes a ReadMessageBefore in progress (or the next one)
// return mcp.ErrReadTimeout.
func (c *Conn) InterruptRead() {
	if c.directOK {
		c.rd.Interrupt()
	}
}

func (c *Conn) readFailed(err error) error {
	if errors.Is(err, errFrameTooLarge) {
		ferr := fmt.Errorf("server %q: %w", c.server, &mcp.FrameTooLargeError{Limit: c.maxFrame})
		c.setFatal(ferr)
		c.log.Warn("server sent an oversized message; closing the session", "limit", c.maxFrame)
		// No grace for a server that broke framing: kill now, then clean up.
		c.grp.Kill()
		_ = c.Close()
		return ferr
	}
	if c.closing.Load() {
		return mcp.ErrClosed
	}
	// stdout ended, failed, or hit the post-exit deadline: in every case the
	// useful answer is why the server went away.
	if !c.waitExit(exitWait) {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("server %q closed its stdout but is still running", c.server)
		}
		return fmt.Errorf("server %q: reading stdout: %w", c.server, err)
	}
	return c.exitError()
}

// WriteMessage sends msg plus a newline in a single write, so a message is
// never interleaved or split by us. ctx cancellation unblocks a write stuck
// on a full pipe (a server that stopped reading).
func (c *Conn) WriteMessage(ctx context.Context, msg []byte) error {
	if err := c.writable(ctx); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.writeBuf = append(append(c.writeBuf[:0], msg...), '\n')
	err := c.writeLocked(ctx, c.writeBuf)
	if cap(c.writeBuf) > 1<<20 {
		c.writeBuf = nil // don't pin one huge message's buffer for the session
	}
	return err
}

// WriteFrames sends several messages, each already followed by '\n', in
// one write: the Peer batches concurrent senders through it.
func (c *Conn) WriteFrames(ctx context.Context, frames []byte) error {
	if err := c.writable(ctx); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.writeLocked(ctx, frames)
}

var _ mcp.FrameWriter = (*Conn)(nil)

// writable reports why nothing can be written now, if anything.
func (c *Conn) writable(ctx context.Context) error {
	if err := c.fatalErr(); err != nil {
		return err
	}
	if c.closing.Load() {
		return mcp.ErrClosed
	}
	select {
	case <-c.exited:
		return c.exitError()
	default:
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("server %q: write: %w", c.server, err)
	}
	return nil
}

// writeLocked writes b with ctx able to interrupt a blocked write; the
// caller holds writeMu. What the pipe takes at once (a whole frame,
// usually) is written first and needs no watcher; only the rest, which
// waits for the server to read, is written under one, since registering
// with ctx costs more than a write.
func (c *Conn) writeLocked(ctx context.Context, b []byte) error {
	done := c.quick.write(b)
	if done == len(b) {
		return nil
	}
	stop := c.watchWrite(ctx)
	n, err := c.stdin.Write(b[done:])
	stop()
	if err == nil {
		return nil
	}
	return c.writeFailed(ctx, done+n, len(b), err)
}

// watchWrite arms a write deadline that fires when ctx is done. The returned
// stop waits for a callback already in flight, so its deadline cannot leak
// into the next write, then clears the deadline.
func (c *Conn) watchWrite(ctx context.Context) (stop func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	fired := make(chan struct{})
	stopFn := context.AfterFunc(ctx, func() {
		_ = c.stdin.SetWriteDeadline(time.Unix(1, 0))
		close(fired)
	})
	return func() {
		if !stopFn() {
			<-fired
			_ = c.stdin.SetWriteDeadline(time.Time{})
		}
	}
}

func (c *Conn) writeFailed(ctx context.Context, n, total int, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
		if n > 0 {
			// Half a message is in the pipe; anything after it would be
			// parsed as garbage by the server, so the stream is finished.
			ferr := fmt.Errorf("server %q: write interrupted after %d of %d bytes, so the session cannot continue: %w", c.server, n, total, ctx.Err())
			c.setFatal(ferr)
			return ferr
		}
		return fmt.Errorf("server %q: write: %w", c.server, ctx.Err())
	}
	if c.closing.Load() {
		return mcp.ErrClosed
	}
	// Typically EPIPE: the server closed stdin or exited.
	if c.waitExit(exitWait) {
		return c.exitError()
	}
	ferr := fmt.Errorf("server %q stopped accepting input on stdin: %w", c.server, err)
	c.setFatal(ferr)
	return ferr
}

// Close stops the server the way the MCP stdio transport prescribes: close
// its stdin, give it CloseGrace to exit, SIGTERM the group, another
// CloseGrace, then SIGKILL. It always reaps the process and returns nil;
// it is safe to call repeatedly and concurrently with ReadMessage.
func (c *Conn) Close() error {
	c.closeOnce.Do(c.shutdown)
	return nil
}

func (c *Conn) shutdown() {
	c.closing.Store(true)
	_ = c.stdin.Close()
	if !c.waitExit(c.grace) {
		c.log.Debug("server ignored stdin EOF; sending terminate", "pid", c.pid)
		c.grp.Term()
		if !c.waitExit(c.grace) {
			c.log.Warn("server ignored terminate; killing it", "pid", c.pid)
			c.grp.Kill()
			<-c.exited
		}
	}
	// Unblocks a concurrent ReadMessage even if an escaped descendant still
	// holds the write end.
	_ = c.stdout.Close()
	// Give the stderr reader a moment to pick up the last lines, which are
	// the most useful ones, then cut it off.
	t := time.NewTimer(c.grace)
	select {
	case <-c.stderrDone:
	case <-t.C:
	}
	t.Stop()
	_ = c.stderr.Close()
	<-c.stderrDone
	releasePipes(c.grown)
}

func (c *Conn) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

// wait reaps the leader; the group goes with it at once: descendants
// that inherited stdout would otherwise keep the session looking alive
// after the server itself is gone.
func (c *Conn) wait() {
	err := c.grp.Wait()
	if ps := c.cmd.ProcessState; ps != nil {
		c.exitCode, c.exitSig = proc.ExitStatus(ps)
	} else {
		c.exitCode = -1
		c.log.Warn("waiting for server failed", "error", err)
	}
	c.log.Debug("server exited", "pid", c.pid, "code", c.exitCode, "signal", c.exitSig)
	// Bound the final reads in case a descendant that left the group still
	// holds a pipe: after exitWait they fail and the exit is reported.
	deadline := time.Now().Add(exitWait)
	c.rd.Bound(deadline)
	_ = c.stderr.SetReadDeadline(deadline)
	close(c.exited)
}

// readStderr drains stderr for the whole life of the process: a server
// blocked on a full stderr pipe would hang mid-request.
func (c *Conn) readStderr() {
	defer close(c.stderrDone)
	r := bufio.NewReaderSize(c.stderr, 4<<10)
	line := make([]byte, 0, maxKeptLine)
	for {
		chunk, err := r.ReadSlice('\n')
		if room := maxKeptLine - len(line); room > 0 {
			line = append(line, chunk[:min(len(chunk), room)]...)
		}
		if err == bufio.ErrBufferFull {
			continue // the rest of an over-long line is dropped
		}
		if s := strings.TrimRight(keepLine(line), "\r\n"); strings.TrimSpace(s) != "" {
			c.log.Debug("stderr", "line", s)
			c.stderrRing.add(s)
		}
		line = line[:0]
		if err != nil {
			return
		}
	}
}

func (c *Conn) onNoise(line []byte) {
	s := keepLine(line)
	c.noiseRing.add(s)
	c.noiseCount++
	switch {
	case c.noiseCount <= maxNoiseLogs:
		c.log.Warn("server wrote non-JSON text to stdout; ignoring it", "line", s)
	case c.noiseCount == maxNoiseLogs+1:
		c.log.Warn("further stdout noise suppressed")
	}
}

// exitError describes the exit; the caller has seen c.exited closed.
func (c *Conn) exitError() *ExitError {
	t := time.NewTimer(exitWait)
	select {
	case <-c.stderrDone:
	case <-t.C:
	}
	t.Stop()
	return &ExitError{
		Server:      c.server,
		Command:     slices.Clone(c.command),
		Code:        c.exitCode,
		Signal:      c.exitSig,
		Stderr:      c.stderrRing.snapshot(),
		StdoutNoise: c.noiseRing.snapshot(),
	}
}

func (c *Conn) fatalErr() error {
	c.fatalMu.Lock()
	defer c.fatalMu.Unlock()
	return c.fatal
}

func (c *Conn) setFatal(err error) {
	c.fatalMu.Lock()
	if c.fatal == nil {
		c.fatal = err
	}
	c.fatalMu.Unlock()
}
