package filelock

import (
	"context"
	"os"
)

// Hold takes the lock file at path as Acquire does, for a short change to
// the file it guards, and removes it on release: none is left beside that
// file (a lockfile in a user's repository) once the change is made.
//
// Removing a lock file races with those waiting on it: a process that
// opened the file before it was removed would lock the removed file,
// while the next one creates and locks a new one, and both would hold
// "the" lock. So the holder removes the file while it still holds the
// lock, and a process that gets the lock checks that path is still the
// file it locked (the same inode), else it lets go and starts again.
// Where files cannot be removed while open (removeHeld false), the file
// stays, as Acquire's does.
func Hold(ctx context.Context, path string) (release func(), err error) {
	for {
		f, err := Acquire(ctx, path)
		if err != nil {
			return nil, err
		}
		held, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		now, err := os.Stat(path)
		if err == nil && os.SameFile(held, now) {
			return func() {
				if removeHeld {
					os.Remove(path) // while held: see above
				}
				f.Close()
			}, nil
		}
		// The holder before removed it after this process opened it: the
		// lock taken is on a removed file. Start again on the file at
		// path now.
		f.Close()
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
	}
}
