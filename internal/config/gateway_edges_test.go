package config

import (
	"reflect"
	"testing"
	"time"
)

// allowed_hosts and the HTTP body and stdio drain limits (issue 37), in
// HCL and in the JSON twin compile makes of it.
func TestGatewayEdges(t *testing.T) {
	cfg := mustLoad(t, "nexus.hcl", `gateway {
  allowed_hosts = ["nexus.example.com", "10.0.0.5:8750", "[::1]"]
  limits {
    body_timeout  = "5s"
    min_body_rate = 1024
    drain_timeout = "1m"
  }
}
`, nil)
	g := cfg.Gateway
	wantHosts := []string{"nexus.example.com", "10.0.0.5:8750", "[::1]"}
	wantLimits := GatewayLimits{BodyTimeout: 5 * time.Second, MinBodyRate: 1024, DrainTimeout: time.Minute}
	if !reflect.DeepEqual(g.AllowedHosts, wantHosts) || g.Limits != wantLimits {
		t.Errorf("got %v %+v", g.AllowedHosts, g.Limits)
	}
	out, _, err := Compile(cfg, FormatNexusJSON)
	if err != nil {
		t.Fatal(err)
	}
	twin := mustLoad(t, "nexus.json", string(out), nil).Gateway
	if !reflect.DeepEqual(twin.AllowedHosts, wantHosts) || twin.Limits != wantLimits {
		t.Errorf("the JSON twin: %v %+v\n%s", twin.AllowedHosts, twin.Limits, out)
	}
}

func TestGatewayAllowedHostsErrors(t *testing.T) {
	for name, src := range map[string]string{
		"allowed_hosts":      "gateway {\n  allowed_hosts = [\"https://nexus.example.com/mcp\"]\n}\n",
		"allowed_hosts_port": "gateway {\n  allowed_hosts = [\"nexus.example.com:http\"]\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadOne(t, "nexus.hcl", src, nil)
			if err == nil {
				t.Fatal("loaded")
			}
			golden(t, "gateway_"+name, errText(err))
		})
	}
	if _, err := loadOne(t, "nexus.json", `{"gateway": {"allowed_hosts": ["a b"]}}`, nil); err == nil {
		t.Error("nexus.json: a host with a space loaded")
	}
}
