package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/internal/bounded"
)

// MaxApprovalsFile bounds the approvals file a store reads.
const MaxApprovalsFile = 1 << 20

// Approval is one remembered "always".
type Approval struct {
	Agent  string `json:"agent"`
	Server string `json:"server"`
	Tool   string `json:"tool,omitempty"` // "" for every use of the server
	// Fingerprint is of the server as approved (Fingerprint): an approval
	// of a server whose command or URL changed since no longer applies.
	Fingerprint string    `json:"fingerprint"`
	Granted     time.Time `json:"granted"`
}

// Fingerprint identifies what a server is for an approval: its transport
// and what it runs or reaches (a command with its arguments, a URL, a
// plugin and its config), as one string per part.
func Fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// FileApprovals keeps approvals in a JSON file (the CLI's is
// ~/.nexus/approvals.json), written whole, atomically and private to the
// user. Servers maps each configured server to its current Fingerprint.
type FileApprovals struct {
	path    string
	servers map[string]string

	mu   sync.Mutex
	list []Approval
}

type approvalsFile struct {
	Approvals []Approval `json:"approvals"`
}

// OpenApprovals reads the approvals at path (none yet is no error).
func OpenApprovals(path string, servers map[string]string) (*FileApprovals, error) {
	a := &FileApprovals{path: path, servers: servers}
	list, err := ReadApprovals(path)
	a.list = list
	return a, err
}

// ReadApprovals reads an approvals file: nothing when there is none, an
// error saying what is wrong and how to fix it when it cannot be used.
func ReadApprovals(path string) ([]Approval, error) {
	b, err := bounded.ReadFile(path, MaxApprovalsFile)
	var tl *bounded.TooLargeError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.As(err, &tl):
		return nil, fmt.Errorf("approvals file %s is over %d bytes; delete it (nexus approvals revoke --all) and approve again", path, MaxApprovalsFile)
	case err != nil:
		return nil, err
	}
	var af approvalsFile
	if err := json.Unmarshal(b, &af); err != nil {
		return nil, fmt.Errorf("approvals file %s is not valid (%v); delete it (nexus approvals revoke --all) and approve again", path, err)
	}
	return af.Approvals, nil
}

// Approved says whether agent's use of server (tool "" for any) was
// approved "always" while the server was what it is now.
func (a *FileApprovals) Approved(agent, server, tool string) bool {
	fp, ok := a.servers[server]
	if !ok {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.ContainsFunc(a.list, func(x Approval) bool {
		return x.Agent == agent && x.Server == server && x.Tool == tool && x.Fingerprint == fp
	})
}

// Approve remembers an approval, replacing an older one of the same
// agent, server and tool.
func (a *FileApprovals) Approve(agent, server, tool string) error {
	fp, ok := a.servers[server]
	if !ok {
		return fmt.Errorf("server %q is not configured", server)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = slices.DeleteFunc(a.list, func(x Approval) bool { return x.Agent == agent && x.Server == server && x.Tool == tool })
	a.list = append(a.list, Approval{Agent: agent, Server: server, Tool: tool, Fingerprint: fp, Granted: time.Now().UTC().Truncate(time.Second)})
	return WriteApprovals(a.path, a.list)
}

// WriteApprovals replaces the approvals file with list: a temporary file
// in the same directory, then a rename, so a reader never sees half of it.
func WriteApprovals(path string, list []Approval) error {
	b, err := json.MarshalIndent(approvalsFile{Approvals: list}, "", "  ")
	if err != nil {
		return err
	}
	return bounded.WriteFile(path, append(b, '\n'))
}
