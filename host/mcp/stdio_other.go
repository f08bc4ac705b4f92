//go:build !unix

package mcp

import "os"

func pollable(f *os.File) *os.File { return f }
