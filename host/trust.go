package host

import (
	"os"
	"slices"
	"time"

	"github.com/nexus-mcp/nexus/internal/config"
)

// A workspace config (a .nexus/ found walking up from the working
// directory, or ./nexus.hcl) comes with the repository it is in, so
// LoadConfig applies it only once the trust store holds its path with
// its exact content (sha256), as `nexus trust` grants. The functions
// below read and change that store for a program that offers the same.

// Trusted is one config file in the trust store.
type Trusted struct {
	Path    string    `json:"path"`   // absolute, symlinks resolved (TrustKey)
	SHA256  string    `json:"sha256"` // of the file's bytes, hex
	Granted time.Time `json:"granted"`
}

// TrustPath is the trust store LoadConfig consults: $NEXUS_TRUST, else
// ~/.nexus/trust.json; "" when neither is known.
func TrustPath() string {
	home, _ := os.UserHomeDir()
	return config.TrustPath(nil, home)
}

// ReadTrust reads the trust store at store; a missing one is empty.
func ReadTrust(store string) ([]Trusted, error) {
	list, err := config.ReadTrust(store)
	return trusted(list), hostErr(err)
}

// UpdateTrust changes the trust store at store under its file lock:
// change gets the entries as they are and returns them as they should
// be, so that two processes trusting files at once each see the other's
// change. An error from change leaves the store as it was; a nil change
// empties it, even one that cannot be read.
func UpdateTrust(store string, change func([]Trusted) ([]Trusted, error)) error {
	if change == nil {
		return hostErr(config.UpdateTrust(store, nil))
	}
	return hostErr(config.UpdateTrust(store, func(in []config.Trusted) ([]config.Trusted, error) {
		out, err := change(trusted(in))
		if err != nil {
			return nil, err
		}
		list := make([]config.Trusted, len(out))
		for i, t := range out {
			list[i] = config.Trusted(t)
		}
		return list, nil
	}))
}

func trusted(in []config.Trusted) []Trusted {
	out := make([]Trusted, len(in))
	for i, t := range in {
		out[i] = Trusted(t)
	}
	return out
}

// Grant trusts the file key (a TrustKey) with content sum in list,
// replacing what was trusted under that path before.
func Grant(list []Trusted, key, sum string) []Trusted {
	list = slices.DeleteFunc(list, func(t Trusted) bool { return t.Path == key })
	return append(list, Trusted{Path: key, SHA256: sum, Granted: time.Now().UTC().Truncate(time.Second)})
}

// TrustKey is the path a config file is trusted under: absolute, with
// symlinks resolved, so that one file has one key however it is reached.
func TrustKey(path string) (string, error) {
	key, err := config.TrustKey(path)
	return key, hostErr(err)
}

// HashConfig reads a config file as LoadConfig would (bounded, a regular
// file) and returns its bytes and their sha256 in hex: what trusting it
// trusts.
func HashConfig(path string) (data []byte, sha256 string, err error) {
	data, sha256, err = config.HashConfig(path)
	return data, sha256, hostErr(err)
}

// ConfigInventory lists what the config file at path, holding data, would
// run and read, without evaluating any of it: what a person is shown
// before trusting it.
func ConfigInventory(path string, data []byte) []string { return config.Inventory(path, data) }

// WorkspaceConfigs are the config files that need trust which discovery
// finds from the working directory up.
func WorkspaceConfigs() ([]string, error) {
	files, err := config.Discover(config.Options{NoDefault: true})
	if err != nil {
		return nil, hostErr(err)
	}
	var out []string
	for _, f := range files {
		if config.NeedsTrust(f.Layer) {
			out = append(out, f.Path)
		}
	}
	return out, nil
}

// WorkspaceFiles are the config files of dir that need trust, as
// discovery would find them there: dir/.nexus/'s and dir's own nexus.hcl
// and nexus.hcl.json (or, when dir is a .nexus directory, its files).
func WorkspaceFiles(dir string) []string { return config.WorkspaceFiles(dir) }

// TrustUntrusted trusts, in store, the workspace configs LoadConfig left
// out of c for want of trust, with the content that was looked at then
// (UntrustedReport shows it): a file changed since stays untrusted.
func TrustUntrusted(store string, c *Config) error {
	return UpdateTrust(store, func(entries []Trusted) ([]Trusted, error) {
		for _, u := range c.in().Untrusted {
			key, err := TrustKey(u.Path)
			if err != nil {
				return nil, err
			}
			entries = Grant(entries, key, u.SHA256)
		}
		return entries, nil
	})
}
