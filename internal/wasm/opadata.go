package wasm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/nexus-mcp/nexus/internal/bounded"
)

// An OPA bundle (what `opa build -t wasm` writes: a gzipped tar) holds the
// module as /policy.wasm and the data document as /data.json, with any
// data.json under a directory holding the data at that path. A filter may
// point wasm at the bundle itself; its data goes under the data file's and
// the config's.

// MaxDataSize bounds an OPA policy's data document, from a bundle, a data
// file and the config together.
const MaxDataSize = 16 << 20

// isGzip reports whether code starts like a gzip stream.
func isGzip(code []byte) bool { return len(code) >= 2 && code[0] == 0x1f && code[1] == 0x8b }

// readBundle returns the module and the data document of an OPA bundle.
func readBundle(code []byte) (module []byte, data map[string]any, err error) {
	zr, err := gzip.NewReader(bytes.NewReader(code))
	if err != nil {
		return nil, nil, fmt.Errorf("the gzip stream is broken: %v", err)
	}
	// The archive is bounded as a whole: a small file must not unpack
	// into gigabytes.
	tr := tar.NewReader(io.LimitReader(zr, MaxModuleSize+MaxDataSize+1<<20))
	data = map[string]any{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("the tar archive is broken or over %s unpacked: %v", MiB(MaxModuleSize+MaxDataSize+1<<20), err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean("/" + h.Name)
		switch {
		case name == "/policy.wasm" || (module == nil && strings.HasSuffix(name, ".wasm")):
			if h.Size > MaxModuleSize {
				return nil, nil, fmt.Errorf("%s in the bundle is %s, over the %s limit for a module", name, MiB(uint64(h.Size)), MiB(MaxModuleSize))
			}
			if module, err = io.ReadAll(io.LimitReader(tr, MaxModuleSize)); err != nil {
				return nil, nil, fmt.Errorf("reading %s in the bundle: %v", name, err)
			}
		case path.Base(name) == "data.json":
			if h.Size > MaxDataSize {
				return nil, nil, fmt.Errorf("%s in the bundle is %s, over the %s limit for data", name, MiB(uint64(h.Size)), MiB(MaxDataSize))
			}
			raw, err := io.ReadAll(io.LimitReader(tr, MaxDataSize))
			if err != nil {
				return nil, nil, fmt.Errorf("reading %s in the bundle: %v", name, err)
			}
			var doc any
			if err := json.Unmarshal(raw, &doc); err != nil {
				return nil, nil, fmt.Errorf("%s in the bundle is not JSON: %v", name, err)
			}
			dir := strings.Trim(path.Dir(name), "/")
			if dir != "" {
				for _, seg := range reverse(strings.Split(dir, "/")) {
					doc = map[string]any{seg: doc}
				}
			}
			if m, ok := doc.(map[string]any); ok {
				merge(data, m)
			} else if dir == "" {
				return nil, nil, fmt.Errorf("%s in the bundle is not an object", name)
			}
		}
	}
	if module == nil {
		return nil, nil, errors.New("the bundle holds no policy.wasm: it was built without -t wasm")
	}
	return module, data, nil
}

func reverse(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[len(s)-1-i] = x
	}
	return out
}

// merge puts src into dst: objects merge key by key, anything else
// replaces.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// opaData is the data document of an OPA filter: the bundle's, then the
// data file's, then the config's, each merged over the one before.
func opaData(bundle map[string]any, dataFile string, config json.RawMessage) ([]byte, error) {
	data := bundle
	if data == nil {
		data = map[string]any{}
	}
	if dataFile != "" {
		raw, err := bounded.ReadFile(dataFile, MaxDataSize)
		var tl *bounded.TooLargeError
		switch {
		case errors.As(err, &tl):
			return nil, fmt.Errorf("data_file %s is %s, over the %s limit", dataFile, MiB(uint64(max(tl.Size, tl.Max+1))), MiB(MaxDataSize))
		case err != nil:
			return nil, fmt.Errorf("data_file: %v", err)
		}
		m, err := jsonObject(raw)
		if err != nil {
			return nil, fmt.Errorf("data_file %s: %v", dataFile, err)
		}
		merge(data, m)
	}
	if len(bytes.TrimSpace(config)) > 0 && !bytes.Equal(bytes.TrimSpace(config), []byte("null")) {
		m, err := jsonObject(config)
		if err != nil {
			return nil, fmt.Errorf("config: %v", err)
		}
		merge(data, m)
	}
	out, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	if len(out) > MaxDataSize {
		return nil, fmt.Errorf("the data document is %s, over the %s limit", MiB(uint64(len(out))), MiB(MaxDataSize))
	}
	return out, nil
}

// jsonObject decodes a JSON object, saying what else raw is.
func jsonObject(raw []byte) (map[string]any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a JSON %s, where the data document needs an object", jsonKind(v))
	}
	return m, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}
