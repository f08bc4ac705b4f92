package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Record is one decision point, written as one JSON line.
type Record struct {
	Time     time.Time `json:"time"`
	Agent    string    `json:"agent"`
	Session  string    `json:"session,omitempty"`
	Call     string    `json:"call,omitempty"` // the logical call (the gateway's): a modern agent's attempts of one call, and what servers asked during it
	Server   string    `json:"server,omitempty"`
	Method   string    `json:"method"`
	Tool     string    `json:"tool,omitempty"`
	URI      string    `json:"uri,omitempty"`
	Prompt   string    `json:"prompt,omitempty"`
	Decision string    `json:"decision"` // allow, deny, modify, error, would-deny, would-modify
	Link     string    `json:"link,omitempty"`
	Source   string    `json:"source,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Steps    []Step    `json:"steps,omitempty"`
	// The arguments' digest: ArgsHMAC (keyed with the log's key, so a
	// guessable value cannot be confirmed from the log) or, in an unkeyed
	// log, ArgsSHA256; ArgsBytes is their length. See Writer.HashArgs.
	ArgsSHA256 string `json:"args_sha256,omitempty"`
	ArgsHMAC   string `json:"args_hmac,omitempty"`
	ArgsBytes  int    `json:"args_bytes,omitempty"`
	// Args are the arguments themselves (include_arguments), redacted; too
	// big for a record, they are ArgsPreview instead: their start, redacted
	// and cut, with the flag "args_truncated".
	Args        json.RawMessage `json:"args,omitempty"`
	ArgsPreview string          `json:"args_preview,omitempty"`
	IsError     *bool           `json:"is_error,omitempty"`
	Bytes       int             `json:"bytes,omitempty"`
	// Flags qualify the record: the deciding link's own, args_truncated,
	// and of a modern agent's call, input_required (allowed; the agent is
	// asked for input and retries), answer (the agent's answer to a
	// server's input request) and retry (an attempt of a call decided on
	// its first attempt, under the same Call: not a new decision, and
	// recorded whatever its outcome, since a replayed requestState runs
	// the server again).
	Flags []string `json:"flags,omitempty"`
	// Report is why a refused or failed call did not go through: the
	// report the command line prints and the gateway's client reads in
	// brief (diag.JSON, masked as the command line masks it), at most
	// MaxReport bytes; see SetReport.
	Report json.RawMessage `json:"report,omitempty"`

	// Set by the Writer. A record links to the line before it by Prev
	// (sha256, an unkeyed log) or MAC (HMAC-SHA256 with the log's key);
	// the first record of a file carries a random Genesis, and in a keyed
	// log the KeyID of its key.
	Seq     uint64 `json:"seq"`
	Genesis string `json:"genesis,omitempty"`
	KeyID   string `json:"key_id,omitempty"`
	Prev    string `json:"prev,omitempty"`
	MAC     string `json:"mac,omitempty"`
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

	// Keys: Keys.MAC keys the chain, Keys.Sign signs checkpoints. Without
	// a MAC key the chain is plain sha256, which anyone who can write the
	// file can recompute: it shows accidental damage only.
	Keys Keys
	// CheckpointPath is where signed checkpoints go (default Path +
	// ".checkpoints"): a file the log's writers do not share, ideally on
	// another machine's mount. CheckpointEvery is how many records each
	// covers at most (default 1000); one is also written before a
	// rotation and at Close.
	CheckpointPath  string
	CheckpointEvery int
}

// Defaults of Options.
const (
	DefaultMaxBytes = 64 << 20
	DefaultKeep     = 5
	DefaultBuffer   = 4096
	DefaultEvery    = 1000
	// MaxLine bounds one record's line. Write shrinks a record to fit
	// (see clamp), so no record is ever refused for its size.
	MaxLine = 1 << 20
)

// ErrFull is Write's answer, with FailClosed, when the queue is full.
var ErrFull = errors.New("the audit log's queue is full: records are written more slowly than calls come (a slow or stuck disk?)")

// Writer appends records to the log from one goroutine of its own: Write
// only queues, so a slow disk delays no call beyond the bounded queue.
type Writer struct {
	o       Options
	log     hclog.Logger
	queue   chan item
	slots   chan struct{} // FailClosed: places in queue held by calls in flight (Reserve)
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

	lockf *os.File // Path.lock, held while open

	// Owned by the goroutine.
	line    []byte // the record being written
	f       *os.File
	w       *bufio.Writer
	size    int64
	seq     uint64
	prev    string // the link of the last line: what the next record carries
	genesis string // of the active file
	links   *linker
	keyID   string
	cpf     *os.File // the checkpoint sink; nil without a signing key
	sinceCP int      // records since the last checkpoint
	waiting []waiter // Commit's records taken, told once written out
}

// item is a queued record; slot says it holds a place (Reserve); done,
// when set, hears once the record is written out (Commit).
type item struct {
	r    Record
	slot bool
	done chan error
}

// waiter is a Commit waiting for its record to reach the file.
type waiter struct {
	done chan error
	err  error // the record's own failure, if it was not written
}

// maxWaiting bounds the records Commit waits on between two write-outs:
// under a steady stream the queue may never run empty, and a waiting call
// should not wait for it to.
const maxWaiting = 64

// CommitWait bounds how long Commit waits for the disk: a record not
// written by then refuses the call's answer, as a full queue would.
const CommitWait = 10 * time.Second

// Open opens (or creates) the log at o.Path, locks it for this Writer
// alone and resumes its chain.
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
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = DefaultEvery
	}
	if o.CheckpointPath == "" {
		o.CheckpointPath = o.Path + ".checkpoints"
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	w := &Writer{o: o, log: o.Logger, queue: make(chan item, o.Buffer), flushes: make(chan chan struct{}), done: make(chan struct{}),
		links: newLinker(o.Keys.MAC), keyID: KeyID(o.Keys.MAC)}
	if o.FailClosed {
		w.slots = make(chan struct{}, o.Buffer)
	}
	var err error
	if w.lockf, err = lock(o.Path); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			w.closeFiles()
		}
	}()
	st, err := resume(o.Path, w.links, w.keyID)
	if err != nil {
		return nil, err
	}
	w.seq, w.prev, w.genesis = st.seq, st.head, st.genesis
	if w.f, err = os.OpenFile(o.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		return nil, fmt.Errorf("audit log %s: %w; check the directory exists and is writable", o.Path, err)
	}
	fi, err := w.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit log %s: %w", o.Path, err)
	}
	w.size = fi.Size()
	if o.Keys.Sign != nil {
		if w.cpf, err = os.OpenFile(o.CheckpointPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
			return nil, fmt.Errorf("audit checkpoints %s: %w; check the directory exists and is writable, or set checkpoint_path", o.CheckpointPath, err)
		}
	}
	if o.Keys.MAC == nil {
		w.log.Warn("the audit chain is unkeyed (no key in the audit block, no " + EnvKey + "): it shows accidental damage only, since anyone who can write the file can recompute it; set key = var.audit_key (nexus audit keygen makes one)")
	}
	if o.Keys.Sign == nil {
		w.log.Warn("the audit log has no signing key (signing_key, signing_key_file or " + EnvSigningKey + "): no signed checkpoints are written, so records cut from its end or edited there go unnoticed")
	}
	w.w = bufio.NewWriterSize(w.f, 64<<10)
	ok = true
	go w.run()
	return w, nil
}

// closeFiles closes what Open opened, the lock last.
func (w *Writer) closeFiles() error {
	var err error
	for _, f := range []*os.File{w.f, w.cpf, w.lockf} {
		if f != nil {
			if cerr := f.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
	}
	return err
}

// state is where a log file's chain stands.
type state struct {
	seq     uint64
	head    string // the link of the last line, under the Writer's key
	genesis string // of the file's first record
}

// resume reads where the file at path stands: its last record's seq and
// link, and its first record's genesis. It reads the first and the last
// MaxLine bytes at most. A file keyed with another key than keyID is
// refused: the chain would break at the next record.
func resume(path string, l *linker, keyID string) (state, error) {
	var st state
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("audit log %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return st, err
	}
	first, err := readLineMax(bufio.NewReader(f), MaxLine)
	if err != nil {
		return st, fmt.Errorf("audit log %s: its first line is not a record (%v); move the file aside and start a new log", path, err)
	}
	var r0 Record
	if err := json.Unmarshal(first, &r0); err != nil || r0.Genesis == "" {
		return st, fmt.Errorf("audit log %s: its first line is not a record that starts a file (%v); move the file aside and start a new log", path, err)
	}
	switch {
	case r0.KeyID != "" && keyID == "":
		return st, fmt.Errorf("audit log %s is keyed (key id %s) and this config has no key: records written without it would read as tampering; set the audit block's key (or %s) to the log's, or move the file aside", path, r0.KeyID, EnvKey)
	case r0.KeyID != "" && r0.KeyID != keyID:
		return st, fmt.Errorf("audit log %s was keyed with another key (key id %s; this config's is %s): its chain cannot go on under this one; restore the old key, or move the file aside to start a new log", path, r0.KeyID, keyID)
	}
	st.genesis = r0.Genesis
	off := max(fi.Size()-MaxLine-1, 0)
	tail := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(tail, off); err != nil && !errors.Is(err, io.EOF) {
		return st, fmt.Errorf("audit log %s: %w", path, err)
	}
	if tail[len(tail)-1] != '\n' {
		return st, fmt.Errorf("audit log %s ends in a torn line (a crash while writing?); the chain cannot go on from it: move the file aside (nexus audit verify shows where it breaks) and start a new log", path)
	}
	tail = tail[:len(tail)-1]
	line := tail[bytes.LastIndexByte(tail, '\n')+1:]
	var r Record
	if err := json.Unmarshal(line, &r); err != nil || r.Seq == 0 {
		return st, fmt.Errorf("audit log %s: its last line is not a record (%v); move the file aside and start a new log", path, err)
	}
	st.seq, st.head = r.Seq, l.link(line)
	return st, nil
}

// Write queues r. It never waits for the disk: with the queue full, or
// the sink failing, it refuses (FailClosed: the host then refuses the
// call) or drops and counts. A record too big for a line is shrunk first
// (clamp), never refused.
func (w *Writer) Write(r Record) error {
	w.qmu.RLock()
	defer w.qmu.RUnlock()
	if w.closed {
		return errors.New("audit log is closed")
	}
	clamp(&r)
	if w.o.FailClosed {
		if err := w.Err(); err != nil {
			return fmt.Errorf("the audit log cannot be written, and fail_closed is set: %w", err)
		}
		select {
		case w.slots <- struct{}{}:
		default:
			return ErrFull
		}
		w.queue <- item{r: r, slot: true} // room: each queued item holds one of the queue's slots
		return nil
	}
	select {
	case w.queue <- item{r: r}:
		return nil
	default:
	}
	w.drop("the queue is full")
	return nil
}

// Reserve holds a place in the queue for the record of a call about to
// run, so that with FailClosed a call runs only when its record can be
// queued: it refuses while the sink fails or the queue is full. Pass the
// record to Commit, or give the place back with Release. Without
// FailClosed it holds nothing.
func (w *Writer) Reserve() error {
	if !w.o.FailClosed {
		return nil
	}
	w.qmu.RLock()
	defer w.qmu.RUnlock()
	if w.closed {
		return errors.New("audit log is closed")
	}
	if err := w.Err(); err != nil {
		return fmt.Errorf("the audit log cannot be written, and fail_closed is set: %w", err)
	}
	select {
	case w.slots <- struct{}{}:
		return nil
	default:
		return ErrFull
	}
}

// Release gives back a place Reserve held, for a call whose record is not
// written after all.
func (w *Writer) Release() {
	if w.o.FailClosed {
		<-w.slots
	}
}

// Commit queues r in the place Reserve held (it cannot find the queue
// full) and returns only once r's line is written to the file (the kernel has it, so this process being killed cannot lose
// it), so that with FailClosed no answer leaves before its record. Records
// are written out in batches, so waiting calls share one write. It fails
// when the record could not be written, when the log is closed, or after
// CommitWait or ctx's end (the record may still be written later). Without
// FailClosed it is Write.
func (w *Writer) Commit(ctx context.Context, r Record) error {
	if !w.o.FailClosed {
		return w.Write(r)
	}
	done := make(chan error, 1)
	w.qmu.RLock()
	if w.closed {
		w.qmu.RUnlock()
		<-w.slots
		return errors.New("audit log is closed")
	}
	clamp(&r)
	w.queue <- item{r: r, slot: true, done: done}
	w.qmu.RUnlock()
	t := time.NewTimer(CommitWait)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("the audit record was not written, and fail_closed is set: %w", err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("the audit record was not written within %v, and fail_closed is set (a slow or stuck disk?)", CommitWait)
	case <-ctx.Done():
		return fmt.Errorf("the audit record was not written before the call ended, and fail_closed is set: %w", context.Cause(ctx))
	}
}

// HashArgs sets r's argument digest of raw: ArgsHMAC with the log's key,
// ArgsSHA256 without one, and ArgsBytes.
func (w *Writer) HashArgs(r *Record, raw []byte) {
	r.ArgsBytes = len(raw)
	if w.o.Keys.MAC == nil {
		r.ArgsSHA256 = plain(raw)
		return
	}
	r.ArgsHMAC = newLinker(w.o.Keys.MAC).link(raw)
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
		w.checkpoint() // at shutdown: the tail is covered too
		if err := w.w.Flush(); err != nil {
			w.closeErr = err
		}
		w.tell(w.closeErr)
		if err := w.closeFiles(); err != nil && w.closeErr == nil {
			w.closeErr = err
		}
	}()
	for {
		select {
		case it, ok := <-w.queue:
			if !ok {
				return
			}
			w.take(it)
			// Write out once the queue is empty, not per record, unless
			// enough calls wait on it.
			if len(w.queue) == 0 || len(w.waiting) >= maxWaiting {
				w.tell(w.sync())
			}
		case ack := <-w.flushes:
			for n := len(w.queue); n > 0; n-- {
				w.take(<-w.queue)
			}
			w.tell(w.sync())
			close(ack)
		}
	}
}

// take writes a queued record, giving back its place first.
func (w *Writer) take(it item) {
	if it.slot {
		<-w.slots
	}
	err := w.append(it.r)
	if it.done != nil {
		w.waiting = append(w.waiting, waiter{it.done, err})
	}
	if w.sinceCP >= w.o.CheckpointEvery {
		w.checkpoint()
	}
}

// tell answers the Commits waiting on records now written out; err is
// the write-out's failure, if any.
func (w *Writer) tell(err error) {
	for i, c := range w.waiting {
		if c.err == nil {
			c.err = err
		}
		c.done <- c.err
		w.waiting[i] = waiter{}
	}
	w.waiting = w.waiting[:0]
}

// checkpoint signs the head of the chain into the checkpoint sink, once
// what it covers is on disk (so a crash cannot leave a checkpoint that
// claims records the file lost).
func (w *Writer) checkpoint() {
	if w.cpf == nil || w.sinceCP == 0 {
		return
	}
	fail := func(err error) {
		w.setErr(fmt.Errorf("writing a checkpoint to %s: %w", w.o.CheckpointPath, err))
		w.log.Error("audit checkpoint failed", "path", w.o.CheckpointPath, "error", err)
	}
	if err := w.w.Flush(); err != nil {
		w.setErr(fmt.Errorf("writing %s: %w", w.o.Path, err))
		return
	}
	if err := w.f.Sync(); err != nil {
		fail(err)
		return
	}
	c := Checkpoint{Time: time.Now().UTC(), File: filepath.Base(w.o.Path), Genesis: w.genesis, Size: w.size, Seq: w.seq,
		Head: w.prev, Keyed: w.o.Keys.MAC != nil, KeyID: w.keyID}
	if _, err := w.cpf.Write(append(c.signed(w.o.Keys.Sign), '\n')); err != nil {
		fail(err)
		return
	}
	if err := w.cpf.Sync(); err != nil {
		fail(err)
		return
	}
	w.sinceCP = 0
}

// sync writes out what the buffer holds, saying whether it failed.
func (w *Writer) sync() error {
	if err := w.w.Flush(); err != nil {
		err = fmt.Errorf("writing %s: %w", w.o.Path, err)
		w.setErr(err)
		w.log.Error("audit log write failed", "path", w.o.Path, "error", err)
		return err
	}
	return nil
}

// append chains r and writes its line, rotating first when it would pass
// MaxBytes. It says why r was dropped, if it was.
func (w *Writer) append(r Record) error {
	if w.stallHook != nil {
		w.stallHook()
	}
	if w.seq > 0 && w.size > 0 && w.size >= w.o.MaxBytes {
		if err := w.rotate(); err != nil {
			w.setErr(err)
			w.log.Error("audit log rotation failed", "path", w.o.Path, "error", err)
			w.drop("rotation failed")
			return err
		}
	}
	r.Seq = w.seq + 1
	r.Genesis, r.KeyID, r.Prev, r.MAC = "", "", "", ""
	if w.size == 0 { // the first record of a file
		g := make([]byte, 32)
		rand.Read(g)
		r.Genesis, r.KeyID = hex.EncodeToString(g), w.keyID
		if w.prev == "" {
			w.prev = w.links.link([]byte(r.Genesis))
		}
	}
	if w.o.Keys.MAC != nil {
		r.MAC = w.prev
	} else {
		r.Prev = w.prev
	}
	line, err := appendRecord(w.line[:0], &r)
	if err == nil && len(line) > MaxLine {
		err = fmt.Errorf("a record of %d bytes is over the %d-byte limit", len(line), MaxLine)
	}
	if err != nil {
		// clamp makes this unreachable; should it not, the decision is
		// still recorded, without what would not fit.
		w.log.Error("audit record shrunk to its decision", "seq", r.Seq, "error", err)
		r = Record{Time: r.Time, Agent: cut(r.Agent, 256), Server: cut(r.Server, 256), Method: cut(r.Method, 256), Tool: cut(r.Tool, 256),
			Decision: r.Decision, Link: cut(r.Link, 256), ArgsSHA256: r.ArgsSHA256, ArgsHMAC: r.ArgsHMAC, ArgsBytes: r.ArgsBytes,
			Flags: []string{"record_truncated"}, Seq: r.Seq, Genesis: r.Genesis, KeyID: r.KeyID, Prev: r.Prev, MAC: r.MAC}
		if line, err = appendRecord(w.line[:0], &r); err != nil {
			w.drop(err.Error())
			return err
		}
	}
	w.line = line // its buffer serves the next record (bufio copies)
	if _, err := w.w.Write(append(line, '\n')); err != nil {
		err = fmt.Errorf("writing %s: %w", w.o.Path, err)
		w.setErr(err)
		w.drop(err.Error())
		return err
	}
	if r.Genesis != "" {
		w.genesis = r.Genesis
	}
	w.seq, w.prev = r.Seq, w.links.link(line)
	w.sinceCP++
	if cap(w.line) > 64<<10 {
		w.line = nil // one huge record does not keep its buffer
	}
	w.size += int64(len(line) + 1)
	if w.Err() != nil {
		w.setErr(nil)
	}
	return nil
}

// rotate moves Path.i to Path.i+1 (dropping the oldest past Keep) and
// Path to Path.1, and starts a new Path; the chain goes on across.
func (w *Writer) rotate() error {
	w.checkpoint() // the file's tail, before it is renamed
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
