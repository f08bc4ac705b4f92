package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/internal/bounded"
)

// The settings both front ends share are checked here, so that JSON and
// HCL accept exactly the same values and say the same thing about the rest.
// Each check returns "" or a sentence for the Problem line.

func oneOf(field, v string, allowed []string) string {
	for _, a := range allowed {
		if v == a {
			return ""
		}
	}
	return fmt.Sprintf("%s must be one of %s, not %q.%s", field, quoteList(allowed), v, didYouMean(v, allowed))
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	if len(q) <= 2 {
		return strings.Join(q, " or ")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

func checkURL(v string) string {
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Sprintf("url %q is not a URL: %v", v, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Sprintf("url %q must be an http:// or https:// URL with a host", v)
	}
	return ""
}

// parseDuration reads "30s", "1m30s" or a number of seconds.
func parseDuration(s string) (time.Duration, string) {
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		return secondsDuration(secs)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Sprintf("%q is not a positive duration (use seconds, 30, or a duration such as \"30s\" or \"2m\")", s)
	}
	return d, ""
}

func secondsDuration(secs float64) (time.Duration, string) {
	if secs <= 0 || secs > 1e9 {
		return 0, fmt.Sprintf("%v is not a positive number of seconds", secs)
	}
	return time.Duration(secs * float64(time.Second)), ""
}

// resolvePath makes p absolute against dir, the directory of the config
// file that names it, and expands a leading ~.
func resolvePath(p, dir, home string) string {
	if p == "" {
		return ""
	}
	if p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, `~\`) {
		p = filepath.Join(home, p[1:])
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

// readEnvFile reads KEY=value lines, as Cursor's and VS Code's envFile
// and docker's --env-file do: # comments, blank lines, an optional
// "export ", and values optionally in matching quotes.
func readEnvFile(p string) (map[string]string, string) {
	data, err := bounded.ReadFile(p, MaxFileSize)
	var (
		tl *bounded.TooLargeError
		nr *bounded.NotRegularError
	)
	switch {
	case errors.As(err, &tl), errors.As(err, &nr):
		return nil, "envFile " + err.Error()
	case err != nil:
		return nil, fmt.Sprintf("envFile %s cannot be read: %v", p, err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, MaxFileSize)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !envName.MatchString(k) {
			return nil, fmt.Sprintf("envFile %s, line %d: expected KEY=value", p, n)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out[k] = v
	}
	return out, ""
}

// pointer appends a JSON pointer token (RFC 6901) to base.
func pointer(base string, tok any) string {
	s := fmt.Sprint(tok)
	s = strings.ReplaceAll(s, "~", "~0")
	s = strings.ReplaceAll(s, "/", "~1")
	return base + "/" + s
}
