package bounded

import (
	"fmt"
	"io"
	"io/fs"
)

// TooLargeError is a file over the limit.
type TooLargeError struct {
	Path string
	Size int64 // its size when it was opened (it may have grown since)
	Max  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is over the %s limit", e.Path, Size(e.Max))
}

// NotRegularError is a path that is not a regular file.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	kind := "not a regular file"
	switch {
	case e.Mode.IsDir():
		kind = "a directory, not a file"
	case e.Mode&fs.ModeNamedPipe != 0:
		kind = "a named pipe, not a file"
	case e.Mode&fs.ModeDevice != 0:
		kind = "a device, not a file"
	case e.Mode&fs.ModeSocket != 0:
		kind = "a socket, not a file"
	}
	return e.Path + " is " + kind
}

// ReadFile reads the regular file at path, of at most max bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	if fi.Size() > max {
		return nil, &TooLargeError{Path: path, Size: fi.Size(), Max: max}
	}
	// The size is a hint for the buffer, not a bound: the file may grow.
	buf := make([]byte, 0, min(fi.Size(), max)+1)
	for {
		// Never ask for more than one byte past the limit, however the
		// buffer grew.
		n, err := f.Read(buf[len(buf):min(int64(cap(buf)), max+1)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, &TooLargeError{Path: path, Size: fi.Size(), Max: max}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow; the limit is checked above
		}
	}
}

// Size is n bytes as a person reads a limit: "10 MiB", "64 KiB", "512
// bytes", "1 byte". Errors about limits everywhere say them so.
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n == 1:
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}
