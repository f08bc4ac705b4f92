package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Record is one decision point, written as one JSON line.
type Record struct {
	Time       time.Time       `json:"time"`
	Agent      string          `json:"agent"`
	Session    string          `json:"session,omitempty"`
	Server     string          `json:"server,omitempty"`
	Method     string          `json:"method"`
	Tool       string          `json:"tool,omitempty"`
	URI        string          `json:"uri,omitempty"`
	Prompt     string          `json:"prompt,omitempty"`
	Decision   string          `json:"decision"` // allow, deny, modify, error, would-deny, would-modify
	Link       string          `json:"link,omitempty"`
	Source     string          `json:"source,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Steps      []Step          `json:"steps,omitempty"`
	ArgsSHA256 string          `json:"args_sha256,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	IsError    *bool           `json:"is_error,omitempty"`
	Bytes      int             `json:"bytes,omitempty"`
	Flags      []string        `json:"flags,omitempty"`

	// Set by the Writer.
	Seq     uint64 `json:"seq"`
	Genesis string `json:"genesis,omitempty"`
	Prev    string `json:"prev"`
}

// Step is one link that ran, in order.
type Step struct {
	Link   string  `json:"link"`
	Source string  `json:"source,omitempty"`
	Action string  `json:"action"`
	Micros float64 `json:"us"`
}

// Options configure a Writer.
type Options struct {
	Path       string // the active file; rotated ones are Path.1 (newest) to Path.Keep
	MaxBytes   int64  // rotate when the active file would pass it (default 64 MiB)
	Keep       int    // rotated files kept (default 5)
	Buffer     int    // records queued before Write refuses or drops (default 4096)
	FailClosed bool   // Write refuses (the host refuses the call) rather than drop
	Logger     hclog.Logger
}

// Defaults of Options.
const (
	DefaultMaxBytes = 64 << 20
	DefaultKeep     = 5
	DefaultBuffer   = 4096
	// MaxLine bounds one record: a bigger one is refused.
	MaxLine = 1 << 20
)

// ErrFull is Write's answer, with FailClosed, when the queue is full.
var ErrFull = errors.New("the audit log's queue is full: records are written more slowly than calls come (a slow or stuck disk?)")

// Writer appends records to the log from one goroutine of its own: Write
// only queues, so a slow disk delays no call beyond the bounded queue.
type Writer struct {
	o       Options
	log     hclog.Logger
	queue   chan Record
	flushes chan chan struct{}
	done    chan struct{}
	qmu     sync.RWMutex // Close takes it to close queue; Write holds it shared to send
	closed  bool
	once    sync.Once

	dropped   atomic.Uint64
	lastWarn  atomic.Int64 // unix nanos of the last drop warning
	mu        sync.Mutex
	err       error // the sink's last error, nil once a write succeeds
	closeErr  error
	stallHook func() // tests: called by the goroutine before each record

	// Owned by the goroutine.
	line []byte // the record being written
	f    *os.File
	w    *bufio.Writer
	size int64
	seq  uint64
	prev string
}

// Open opens (or creates) the log at o.Path and resumes its chain.
func Open(o Options) (*Writer, error) {
	if o.Path == "" {
		return nil, errors.New("audit: no path")
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	w := &Writer{o: o, log: o.Logger, queue: make(chan Record, o.Buffer), flushes: make(chan chan struct{}), done: make(chan struct{})}
	seq, prev, err := resume(o.Path)
	if err != nil {
		return nil, err
	}
	w.seq, w.prev = seq, prev
	if w.f, err = os.OpenFile(o.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		return nil, fmt.Errorf("audit log %s: %w; check the directory exists and is writable", o.Path, err)
	}
	st, err := w.f.Stat()
	if err != nil {
		w.f.Close()
		return nil, fmt.Errorf("audit log %s: %w", o.Path, err)
	}
	w.size = st.Size()
	w.w = bufio.NewWriterSize(w.f, 64<<10)
	go w.run()
	return w, nil
}

// resume finds the last record of the file at path: its seq and the hash
// of its line. It reads the last MaxLine bytes at most.
func resume(path string) (uint64, string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("audit log %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0, "", err
	}
	off := max(st.Size()-MaxLine-1, 0)
	tail := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(tail, off); err != nil && !errors.Is(err, io.EOF) {
		return 0, "", fmt.Errorf("audit log %s: %w", path, err)
	}
	if tail[len(tail)-1] != '\n' {
		return 0, "", fmt.Errorf("audit log %s ends in a torn line (a crash while writing?); the chain cannot go on from it: move the file aside (nexus audit verify shows where it breaks) and start a new log", path)
	}
	tail = tail[:len(tail)-1]
	line := tail[bytes.LastIndexByte(tail, '\n')+1:]
	var r Record
	if err := json.Unmarshal(line, &r); err != nil || r.Seq == 0 {
		return 0, "", fmt.Errorf("audit log %s: its last line is not a record (%v); move the file aside and start a new log", path, err)
	}
	return r.Seq, hashLine(line), nil
}

func hashLine(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}

// Write queues r. It never waits for the disk: with the queue full, or
// the sink failing, it refuses (FailClosed: the host then refuses the
// call) or drops and counts.
func (w *Writer) Write(r Record) error {
	w.qmu.RLock()
	defer w.qmu.RUnlock()
	if w.closed {
		return errors.New("audit log is closed")
	}
	if w.o.FailClosed {
		if err := w.Err(); err != nil {
			return fmt.Errorf("the audit log cannot be written, and fail_closed is set: %w", err)
		}
	}
	select {
	case w.queue <- r:
		return nil
	default:
	}
	if w.o.FailClosed {
		return ErrFull
	}
	w.drop("the queue is full")
	return nil
}

// drop counts a lost record and says so, at most once a second.
func (w *Writer) drop(why string) {
	n := w.dropped.Add(1)
	now := time.Now().UnixNano()
	if last := w.lastWarn.Load(); now-last > int64(time.Second) && w.lastWarn.CompareAndSwap(last, now) {
		w.log.Error("audit records dropped", "why", why, "dropped_total", n)
	}
}

// FailClosed says whether calls must stop while the log cannot be
// written (Options.FailClosed).
func (w *Writer) FailClosed() bool { return w.o.FailClosed }

// Dropped counts the records lost so far.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }

// Err is the sink's last error, or nil once a write succeeds again.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Writer) setErr(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}

// Flush waits until everything queued before it is written out.
func (w *Writer) Flush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case w.flushes <- ack:
	case <-w.done:
		return errors.New("audit log is closed")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return w.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes what is queued, stops the writer and closes the file.
func (w *Writer) Close() error {
	w.once.Do(func() {
		w.qmu.Lock()
		w.closed = true
		close(w.queue)
		w.qmu.Unlock()
		<-w.done
	})
	return w.closeErr
}

func (w *Writer) run() {
	defer close(w.done)
	defer func() {
		if err := w.w.Flush(); err != nil {
			w.closeErr = err
		}
		if err := w.f.Close(); err != nil && w.closeErr == nil {
			w.closeErr = err
		}
	}()
	for {
		select {
		case r, ok := <-w.queue:
			if !ok {
				return
			}
			w.append(r)
			// Write out once the queue is empty, not per record.
			if len(w.queue) == 0 {
				w.sync()
			}
		case ack := <-w.flushes:
			for n := len(w.queue); n > 0; n-- {
				w.append(<-w.queue)
			}
			w.sync()
			close(ack)
		}
	}
}

func (w *Writer) sync() {
	if err := w.w.Flush(); err != nil {
		w.setErr(fmt.Errorf("writing %s: %w", w.o.Path, err))
		w.log.Error("audit log write failed", "path", w.o.Path, "error", err)
	}
}

// append chains r and writes its line, rotating first when it would pass
// MaxBytes.
func (w *Writer) append(r Record) {
	if w.stallHook != nil {
		w.stallHook()
	}
	if w.seq > 0 && w.size > 0 && w.size >= w.o.MaxBytes {
		if err := w.rotate(); err != nil {
			w.setErr(err)
			w.log.Error("audit log rotation failed", "path", w.o.Path, "error", err)
			w.drop("rotation failed")
			return
		}
	}
	r.Seq = w.seq + 1
	r.Genesis = ""
	if w.size == 0 { // the first record of a file
		g := make([]byte, 32)
		rand.Read(g)
		r.Genesis = hex.EncodeToString(g)
		if w.prev == "" {
			w.prev = hashLine([]byte(r.Genesis))
		}
	}
	r.Prev = w.prev
	line, err := appendRecord(w.line[:0], &r)
	if err == nil {
		w.line = line // its buffer serves the next record (bufio copies)
	}
	if err != nil || len(line) > MaxLine {
		if err == nil {
			err = fmt.Errorf("a record of %d bytes is over the %d-byte limit", len(line), MaxLine)
		}
		w.log.Error("audit record refused", "error", err)
		w.drop(err.Error())
		return
	}
	if _, err := w.w.Write(append(line, '\n')); err != nil {
		w.setErr(fmt.Errorf("writing %s: %w", w.o.Path, err))
		w.drop(err.Error())
		return
	}
	w.seq, w.prev = r.Seq, hashLine(line)
	if cap(w.line) > 64<<10 {
		w.line = nil // one huge record does not keep its buffer
	}
	w.size += int64(len(line) + 1)
	if w.Err() != nil {
		w.setErr(nil)
	}
}

// rotate moves Path.i to Path.i+1 (dropping the oldest past Keep) and
// Path to Path.1, and starts a new Path; the chain goes on across.
func (w *Writer) rotate() error {
	if err := w.w.Flush(); err != nil {
		return err
	}
	if err := w.f.Close(); err != nil {
		return err
	}
	os.Remove(w.o.Path + "." + strconv.Itoa(w.o.Keep))
	for i := w.o.Keep - 1; i >= 1; i-- {
		from := w.o.Path + "." + strconv.Itoa(i)
		if _, err := os.Stat(from); err == nil {
			if err := os.Rename(from, w.o.Path+"."+strconv.Itoa(i+1)); err != nil {
				return err
			}
		}
	}
	if err := os.Rename(w.o.Path, w.o.Path+".1"); err != nil {
		return err
	}
	f, err := os.OpenFile(w.o.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	w.f, w.size = f, 0
	w.w.Reset(f)
	return nil
}
