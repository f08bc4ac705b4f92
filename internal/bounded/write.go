package bounded

import (
	"os"
	"path/filepath"
)

// WriteFile replaces the file at path with data, readable by its owner
// only: a temporary file in the same directory (made 0700 if missing),
// synced, then renamed over path, so a reader sees the old content or the
// new, never half of it. The state files Nexus keeps (approvals, workspace
// trust, OAuth tokens) are written so.
func WriteFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
