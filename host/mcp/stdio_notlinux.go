//go:build !linux

package mcp

import (
	"io"
	"os"
)

func stdinReader(f *os.File) io.Reader { return pollable(f) }
