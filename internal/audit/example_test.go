package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nexus-mcp/nexus/internal/audit"
)

// Write two decisions, then check the chain.
func ExampleVerify() {
	dir, _ := os.MkdirTemp("", "audit")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "nexus-audit.jsonl")
	w, err := audit.Open(audit.Options{Path: path})
	if err != nil {
		fmt.Println(err)
		return
	}
	w.Write(audit.Record{Time: time.Now(), Agent: "claude", Server: "github", Method: "tools/call", Tool: "get_issue", Decision: "allow"})
	w.Write(audit.Record{Time: time.Now(), Agent: "claude", Server: "github", Method: "tools/call", Tool: "delete_repo", Decision: "deny", Link: "no-destructive"})
	w.Flush(context.Background())
	w.Close()
	rep, err := audit.Verify(path)
	fmt.Println(rep.Records, "records, seq", rep.First, "to", rep.Last, err)
	// Output: 2 records, seq 1 to 2 <nil>
}
