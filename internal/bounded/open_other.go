//go:build !unix

package bounded

import "os"

func open(path string) (*os.File, error) { return os.Open(path) }
