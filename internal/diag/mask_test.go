package diag

import (
	"strings"
	"testing"
)

// Query parameters that carry credentials under many names are masked;
// other parameters and the rest of the URL are kept as written.
func TestMaskURLsQuery(t *testing.T) {
	for in, want := range map[string]string{
		"https://h/x?subscription-key=abc&region=eu":        "https://h/x?subscription-key=***&region=eu",
		"https://h/x?application_key=a&authkey=b&session=c": "https://h/x?application_key=***&authkey=***&session=***",
		"https://h/x?X-Amz-Signature=s&X-Amz-Date=d":        "https://h/x?X-Amz-Signature=***&X-Amz-Date=d",
		"see https://u:pw@h/x?token=t, then retry":          "see https://u:***@h/x?token=***, then retry",
		"https://h/x?page=2&sort=name":                      "https://h/x?page=2&sort=name",
		"postgres://app:secret@db/app?sslmode=require":      "postgres://app:***@db/app?sslmode=require",
		"https://TOKEN@h/mcp":                               "https://***@h/mcp",
		"ssh://git@github.example/org/repo":                 "ssh://git@github.example/org/repo",
		"ssh://git:pw@host/repo":                            "ssh://git:***@host/repo",
		"no url here: key=value":                            "no url here: key=value",
	} {
		if got := MaskURLs(in); got != want {
			t.Errorf("MaskURLs(%q) = %q, want %q", in, got, want)
		}
	}
}

// Reports mask what they quote: the URL and Command lines and the text.
func TestReportMasks(t *testing.T) {
	r := &Report{Title: "T", URL: "https://u:pw1@h/mcp?api_key=k1", Command: []string{"srv", "--token", "t1", "--db=postgres://a:pw2@db/x"},
		Problem: `POST https://u:pw1@h/mcp?api_key=k1 failed`}
	got := r.Error()
	for _, secret := range []string{"pw1", "k1", "t1", "pw2"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q printed:\n%s", secret, got)
		}
	}
}
