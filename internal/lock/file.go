package lock

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nexus-mcp/nexus/internal/bounded"
	"github.com/nexus-mcp/nexus/internal/filelock"
)

// The lockfile on disk, shared by every replica of a gateway that runs
// beside it: written whole and renamed into place (WriteFile), so a
// reader never sees half of it; changed under a file lock (Update), so
// two people accepting at once on two replicas both land; and watched
// (Watch), so each replica enforces what another wrote without a
// restart.

// WriteFile writes l to path as Write renders it: into a temporary file
// beside it, then renamed over it, so a replica watching the file never
// reads a half-written one.
func (l *Lock) WriteFile(path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing the lockfile %s: %w (can this process write to its directory?)", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(l.Write())
	if err == nil {
		err = f.Chmod(0o644) // as nexus lock always wrote it: reviewed, not secret
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing the lockfile %s: %w", path, err)
	}
	return nil
}

// Update changes the lockfile at path with change and writes it back,
// holding a lock on a file beside it (.nexus.lock.hcl.lock) meanwhile, so
// that changes made at once by several processes (replicas sharing the
// directory, on one machine or one volume) are applied one after the
// other, none lost. The lock file is there only while a change is made
// (filelock.Hold removes it, safely for those waiting): nothing is left
// in the user's repository. No lockfile yet is an empty one. It returns
// the lockfile as written.
func Update(ctx context.Context, path string, change func(*Lock) error) (*Lock, error) {
	release, err := filelock.Hold(ctx, filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock"))
	if err != nil {
		return nil, fmt.Errorf("the lockfile %s is being changed by another process: %w; try again", path, err)
	}
	defer release()
	l, err := Read(path)
	if err != nil {
		return nil, err
	}
	if l == nil {
		l = &Lock{}
	}
	if err := change(l); err != nil {
		return nil, err
	}
	if err := l.WriteFile(path); err != nil {
		return nil, err
	}
	return l, nil
}

// SetTool pins it among s's tools, replacing the pin of the same name.
func (s *Server) SetTool(it Item) {
	s.Tools = slices.DeleteFunc(s.Tools, func(x Item) bool { return x.Name == it.Name })
	s.Tools = append(s.Tools, it)
	sortItems(s.Tools)
}

// Drift is a tool the lockfile withholds as its server defines it now.
type Drift struct {
	Server string
	Live   Item  // the definition now (Flags empty)
	Pinned *Item // its pin; nil when the tool, or its whole server, is not pinned
	// Fields are where the rest of the definition (all but the
	// description) changed since the pin.
	Fields []Field
	// Flags are the findings of the chain's tools/list policies against
	// the definition now ("link: finding", as nexus lock --accept-flagged
	// writes them).
	Flags []string
	// Why is the reason the lockfile withholds it, as agents are told.
	Why string
}

// Watch calls fn with the lockfile at path each time its content
// differs from the last it saw, looking every interval until ctx ends.
// The first it saw is since, the lockfile in force (nil: none), so a
// change made between reading the file and starting to watch it is not
// missed. A file that cannot be read or used is fn(nil, err); one removed
// is fn(nil, nil).
func Watch(ctx context.Context, path string, every time.Duration, since *Lock, fn func(*Lock, error)) {
	w := newWatcher(path, since)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if changed, l, err := w.poll(); changed {
			fn(l, err)
		}
	}
}

// watcher is what Watch last saw of the file.
type watcher struct {
	path    string
	size    int64 // -1: read it at the next look
	mod     time.Time
	sum     [sha256.Size]byte // of the content last seen (as Write renders since, at first)
	missing bool
}

func newWatcher(path string, since *Lock) *watcher {
	w := &watcher{path: path, size: -1, missing: since == nil}
	if since != nil {
		w.sum = sha256.Sum256(since.Write())
	}
	return w
}

// poll looks at the file once: whether it changed since the last look
// and, if so, the lockfile now (nil, nil: removed). Its size and time
// come first: a file that kept them is not read again.
func (w *watcher) poll() (bool, *Lock, error) {
	fi, err := os.Stat(w.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if w.missing {
			return false, nil, nil
		}
		w.missing, w.size, w.sum = true, -1, [sha256.Size]byte{}
		return true, nil, nil
	case err != nil:
		return false, nil, nil // passing (a rename in flight): look again next time
	case !w.missing && fi.Size() == w.size && fi.ModTime().Equal(w.mod):
		return false, nil, nil
	}
	w.size, w.mod = fi.Size(), fi.ModTime() // a file that cannot be read is said once, until it changes
	data, err := bounded.ReadFile(w.path, MaxFile)
	if err != nil {
		w.missing = false
		return true, nil, fmt.Errorf("the lockfile %s cannot be read: %w", w.path, err)
	}
	sum := sha256.Sum256(data)
	if !w.missing && sum == w.sum {
		return false, nil, nil // touched, or written as it was
	}
	w.missing, w.sum = false, sum
	l, err := Parse(data, w.path)
	if err != nil {
		return true, nil, err
	}
	return true, l, nil
}

// Kind is what happened to the definition, for a person: "changed"
// since its pin, or "new" (not pinned at all).
func (d Drift) Kind() string {
	if d.Pinned != nil {
		return "changed"
	}
	return "new"
}
