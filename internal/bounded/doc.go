// Package bounded reads files that come from outside (config files, env
// files, lockfiles, approvals, WASM modules and their data, CA bundles,
// samples given on the command line) with a size limit that holds however
// the file changes while it is read, and without waiting on what is not a
// file.
//
// The checks are made on the opened file, not the path: a path that is a
// FIFO, a device, a directory or a /proc file (whose size says 0) is
// refused before a byte is read, and a FIFO is opened without blocking
// for a writer; a regular file that grows after it was checked is read
// only to one byte past the limit. Callers keep their own messages: they
// tell the errors apart with errors.As and errors.Is (fs.ErrNotExist
// passes through).
package bounded
