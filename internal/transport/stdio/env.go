package stdio

import (
	"errors"
	"runtime"
	"slices"
	"strings"
)

// SafeEnvKeys: the only host environment variables a child gets by default.
// The host environment routinely holds API keys and tokens; a server gets
// what it needs to find its runtime and home directory, nothing more, and
// anything else must be granted by name (EnvPassthrough) or value (Env).
// The Windows entries are what node/npx need to resolve npx.cmd and find
// their config (see PATHEXT, APPDATA).
var SafeEnvKeys = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "SHELL", "TMPDIR", "TMP", "TEMP", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "PATHEXT", "SYSTEMROOT", "COMSPEC"}

// foldEnvCase: Windows environment keys are case-insensitive ("Path" is
// PATH), so matching them exactly would drop PATH on Windows.
const foldEnvCase = runtime.GOOS == "windows"

func envKey(k string, fold bool) string {
	if fold {
		return strings.ToUpper(k)
	}
	return k
}

// splitEnv splits "K=V". The search starts at index 1 because Windows has
// hidden per-drive entries such as "=C:=C:\dir" whose key starts with '='.
func splitEnv(kv string) (k, v string, ok bool) {
	if len(kv) < 2 {
		return "", "", false
	}
	i := strings.IndexByte(kv[1:], '=')
	if i < 0 {
		return "", "", false
	}
	return kv[:i+1], kv[i+2:], true
}

// buildEnv computes the child's environment: the SafeEnvKeys and passthrough
// keys that exist in host, then explicit values, which win. Host duplicates
// resolve to the last one, as the OS would.
func buildEnv(host, passthrough []string, explicit map[string]string, fold bool) ([]string, error) {
	allowed := make(map[string]bool, len(SafeEnvKeys)+len(passthrough))
	for _, k := range SafeEnvKeys {
		allowed[envKey(k, fold)] = true
	}
	for _, k := range passthrough {
		allowed[envKey(k, fold)] = true
	}

	env := []string{}         // never nil: a nil exec.Cmd.Env inherits the whole host environment
	index := map[string]int{} // folded key -> position in env
	set := func(k, v string) {
		fk := envKey(k, fold)
		if i, ok := index[fk]; ok {
			env[i] = k + "=" + v
			return
		}
		index[fk] = len(env)
		env = append(env, k+"="+v)
	}
	for _, kv := range host {
		if k, v, ok := splitEnv(kv); ok && allowed[envKey(k, fold)] {
			set(k, v)
		}
	}
	keys := make([]string, 0, len(explicit))
	for k := range explicit {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic order when two keys fold together
	for _, k := range keys {
		v := explicit[k]
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, errors.New("invalid environment variable name " + quoteEnvKey(k))
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, errors.New("environment variable " + quoteEnvKey(k) + " contains a NUL byte")
		}
		set(k, v)
	}
	return env, nil
}

func quoteEnvKey(k string) string { return "\"" + strings.ReplaceAll(k, "\x00", `\x00`) + "\"" }

// lookupEnv returns the value the child will see for key.
func lookupEnv(env []string, key string, fold bool) string {
	key = envKey(key, fold)
	for _, kv := range slices.Backward(env) {
		if k, v, ok := splitEnv(kv); ok && envKey(k, fold) == key {
			return v
		}
	}
	return ""
}
