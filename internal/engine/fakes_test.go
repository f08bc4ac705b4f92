package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// Stdio servers for the host tests, run by re-executing the test binary
// with NEXUS_HOST_FAKE set (init runs before TestMain, so these modes never
// reach the tests). Unlike the raw-JSON fakes in integration_test.go they
// are real mcp.Servers with a twist:
//
//	slow        waits NEXUS_FAKE_DELAY before serving (a slow initialize)
//	barrier     marks its start in dir NEXUS_FAKE_BARRIER and serves only once
//	            NEXUS_FAKE_N processes have (exit 1 if that takes 20 s): a
//	            set of them can only connect if they are started together
//	dynamic     tools t, grow (adds t2 and sends list_changed), shrink (removes t2)
//	die-once    the first process to get a tools/call exits (code 3); later ones answer
//	crash-init  exits right after the initialized notification
//	tasks       tools that run only as tasks (fake_tasks_test.go)
//
// Each process appends its pid to NEXUS_FAKE_STARTS when that is set.
func init() {
	mode := os.Getenv("NEXUS_HOST_FAKE")
	if mode == "" {
		return
	}
	if f := os.Getenv("NEXUS_FAKE_STARTS"); f != "" {
		w, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(w, os.Getpid())
			w.Close()
		}
	}
	os.Exit(hostFake(mode))
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{{Type: mcp.ContentText, Text: s}}}
}

func hostFake(mode string) int {
	s := mcp.NewServer(mcp.Implementation{Name: "fake-" + mode, Version: "1"}, mcp.ServerOptions{})
	echo := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(req.Name + " ok"), nil
	}
	var conn mcp.Conn = mcp.StdioConn()
	switch mode {
	case "tasks":
		return runTaskFake()
	case "slow":
		d, _ := time.ParseDuration(os.Getenv("NEXUS_FAKE_DELAY"))
		time.Sleep(d)
		s.AddTool(mcp.Tool{Name: "t"}, echo)
	case "barrier":
		dir := os.Getenv("NEXUS_FAKE_BARRIER")
		n, _ := strconv.Atoi(os.Getenv("NEXUS_FAKE_N"))
		os.WriteFile(filepath.Join(dir, strconv.Itoa(os.Getpid())), nil, 0o600)
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			entries, _ := os.ReadDir(dir)
			if len(entries) >= n {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "only %d of %d servers were started together\n", len(entries), n)
				return 1
			}
		}
		s.AddTool(mcp.Tool{Name: "t"}, echo)
	case "dynamic":
		s.AddTool(mcp.Tool{Name: "t"}, echo)
		s.AddTool(mcp.Tool{Name: "grow"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.AddTool(mcp.Tool{Name: "t2"}, echo)
			return text("grew"), nil
		})
		s.AddTool(mcp.Tool{Name: "shrink"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.RemoveTools("t2")
			return text("shrank"), nil
		})
	case "die-once":
		state := os.Getenv("NEXUS_FAKE_STATE")
		s.AddTool(mcp.Tool{Name: "t"}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if _, err := os.Stat(state); err != nil {
				os.WriteFile(state, nil, 0o600)
				fmt.Fprintln(os.Stderr, "fatal: lost the database connection")
				os.Exit(3)
			}
			return text("t ok"), nil
		})
	case "crash-init":
		s.AddTool(mcp.Tool{Name: "t"}, echo)
		conn = &exitAfterInit{conn}
	default:
		fmt.Fprintln(os.Stderr, "unknown NEXUS_HOST_FAKE mode", mode)
		return 2
	}
	s.Serve(context.Background(), conn)
	return 0
}

type exitAfterInit struct{ mcp.Conn }

func (c *exitAfterInit) ReadMessage() ([]byte, error) {
	m, err := c.Conn.ReadMessage()
	if err == nil && strings.Contains(string(m), `"notifications/initialized"`) {
		fmt.Fprintln(os.Stderr, "panic: config is broken")
		os.Exit(2)
	}
	return m, err
}
