package deploy

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
)

// The names the manifests use for the gateway.
const (
	namespace        = "nexus"
	gatewayName      = "nexus" // Deployment, Service, PDB, HPA
	gatewayContainer = "nexus"
	redisName        = "nexus-redis" // the reference Redis: Deployment and Service
	configMapKey     = "nexus.hcl"
	httpPortName     = "http"
	metricsPortName  = "metrics"
	// changeMe marks every placeholder secret value.
	changeMe = "CHANGE-ME"
)

// defaultGrace is nexus serve's --grace default: how long calls in flight
// get after SIGTERM when neither the flag nor shutdown_grace says.
const defaultGrace = 10 * time.Second

// listenPort parses a host:port the gateway listens on; wildcard demands
// that it listen on every interface, as it must in a pod (the kubelet's
// probes and the Service come to the pod's IP).
func listenPort(t *testing.T, what, addr string, wildcard bool) int {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%s %q is not host:port: %v", what, addr, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n > 65535 {
		t.Fatalf("%s %q: %q is not a port", what, addr, port)
	}
	if wildcard {
		if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
			t.Errorf("%s %q listens on %s only; in a pod it must be every interface (0.0.0.0), or probes and the Service cannot reach it", what, addr, host)
		}
	}
	return n
}

// TestDecodeStrictRejects shows that the decoder the manifests go through
// catches the mistakes it is there for.
func TestDecodeStrictRejects(t *testing.T) {
	const ok = "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  ports:\n    - port: 80\n"
	if _, _, err := decodeStrict([]byte(ok)); err != nil {
		t.Fatalf("a valid Service: %v", err)
	}
	for name, doc := range map[string]string{
		"misspelled field":   strings.Replace(ok, "- port: 80", "- prot: 80", 1),
		"field in lowercase": strings.Replace(ok, "- port: 80", "- port: 80\n      targetport: 80", 1),
		"duplicate key":      strings.Replace(ok, "- port: 80", "- port: 80\n      port: 81", 1),
		"wrong type":         strings.Replace(ok, "- port: 80", "- port: eighty", 1),
		"unknown kind":       strings.Replace(ok, "kind: Service", "kind: Servce", 1),
		"unknown apiVersion": strings.Replace(ok, "apiVersion: v1", "apiVersion: v2", 1),
		"YAML 1.1 boolean":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: no\n",
	} {
		if _, _, err := decodeStrict([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without an error:\n%s", name, doc)
		}
	}
}

func TestManifests(t *testing.T) {
	m := loadManifests(t, manifestDir)
	d, ok := m.deployments[gatewayName]
	if !ok {
		t.Fatalf("no Deployment %q in %s", gatewayName, manifestDir)
	}
	pod := &d.Spec.Template
	c := container(t, &pod.Spec, gatewayContainer)
	httpPort := namedPort(t, c, httpPortName)

	t.Run("every kind is there", func(t *testing.T) {
		have := map[string]bool{}
		for _, o := range m.all {
			have[o.kind+" "+o.obj.GetName()] = true
		}
		for _, want := range []string{
			"v1/Namespace " + namespace, "v1/Secret nexus-secrets", "v1/ConfigMap nexus-config",
			"apps/v1/Deployment " + gatewayName, "v1/Service " + gatewayName,
			"policy/v1/PodDisruptionBudget " + gatewayName, "autoscaling/v2/HorizontalPodAutoscaler " + gatewayName,
			"apps/v1/Deployment " + redisName, "v1/Service " + redisName,
		} {
			if !have[want] {
				t.Errorf("no %s in %s", want, manifestDir)
			}
		}
	})

	t.Run("names, namespace and labels", func(t *testing.T) {
		for _, o := range m.all {
			for _, p := range validation.IsDNS1123Label(o.obj.GetName()) {
				t.Errorf("%s: name: %s", o, p)
			}
			if o.kind == "v1/Namespace" {
				if o.obj.GetNamespace() != "" {
					t.Errorf("%s has a namespace", o)
				}
				continue
			}
			if o.obj.GetNamespace() != namespace {
				t.Errorf("%s is in namespace %q, want %q", o, o.obj.GetNamespace(), namespace)
			}
			checkLabels(t, o.String(), o.obj.GetLabels())
		}
		if _, ok := m.namespaces[namespace]; !ok {
			t.Errorf("namespace %q is used but not defined", namespace)
		}
		for name, tmpl := range m.podTemplates() {
			checkLabels(t, name+" pod template", tmpl.Labels)
		}
	})

	t.Run("deployment selects its own pods only", func(t *testing.T) {
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
			t.Errorf("Deployment %s: replicas %s, want 3", d.Name, ptrString(d.Spec.Replicas))
		}
		for name, dep := range m.deployments {
			if ok, err := selects(dep.Spec.Selector, dep.Spec.Template.Labels); err != nil || !ok {
				t.Errorf("Deployment %s's selector does not pick its own pod template (%v)", name, err)
			}
			for other, tmpl := range m.podTemplates() {
				if other == "Deployment "+name {
					continue
				}
				if ok, _ := selects(dep.Spec.Selector, tmpl.Labels); ok {
					t.Errorf("Deployment %s's selector also picks the pods of %s", name, other)
				}
			}
		}
	})

	t.Run("probes", func(t *testing.T) {
		for _, p := range []struct {
			what  string
			probe *corev1.Probe
			path  string
		}{
			{"readinessProbe", c.ReadinessProbe, gateway.ReadyPath},
			{"livenessProbe", c.LivenessProbe, gateway.HealthPath},
		} {
			if p.probe == nil || p.probe.HTTPGet == nil {
				t.Errorf("container %s has no %s with httpGet", c.Name, p.what)
				continue
			}
			g := p.probe.HTTPGet
			if g.Path != p.path {
				t.Errorf("%s's path is %q; the gateway serves it at %q", p.what, g.Path, p.path)
			}
			if g.Port.Type != intstr.String {
				t.Errorf("%s's port is %s; name the container port (%q) instead", p.what, g.Port.String(), httpPortName)
			}
			if cp, ok := portOf(g.Port, *c); !ok || cp.ContainerPort != httpPort.ContainerPort {
				t.Errorf("%s's port %s is not the container's %s port %d", p.what, g.Port.String(), httpPortName, httpPort.ContainerPort)
			}
			if g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP {
				t.Errorf("%s's scheme is %s; the gateway in the pod serves plain HTTP", p.what, g.Scheme)
			}
			if p.probe.TimeoutSeconds > 0 && p.probe.PeriodSeconds > 0 && p.probe.TimeoutSeconds > p.probe.PeriodSeconds {
				t.Errorf("%s: timeoutSeconds %d > periodSeconds %d", p.what, p.probe.TimeoutSeconds, p.probe.PeriodSeconds)
			}
		}
		if c.StartupProbe != nil && c.StartupProbe.HTTPGet != nil && c.StartupProbe.HTTPGet.Path == gateway.ReadyPath {
			t.Errorf("the startupProbe checks %s: a store or server outage would then keep restarting new pods", gateway.ReadyPath)
		}
	})

	t.Run("config", func(t *testing.T) {
		cfg, env := loadGatewayConfig(t, m, d, c)
		gw := cfg.Gateway
		if gw == nil {
			t.Fatal("the ConfigMap's nexus.hcl has no gateway block")
		}
		// The port the config listens on, the image's --listen, the
		// container port and the Service's target are the same.
		if p := listenPort(t, "the ConfigMap's gateway listen", gw.Listen, true); p != int(httpPort.ContainerPort) {
			t.Errorf("the ConfigMap's nexus.hcl listens on %s; the container port %s is %d", gw.Listen, httpPortName, httpPort.ContainerPort)
		}
		argv := append(parseDockerfile(t, dockerfilePath).entrypoint(t), c.Args...)
		if len(c.Command) > 0 {
			argv = append(append([]string{}, c.Command...), c.Args...)
		}
		if l, ok := flag(argv, "listen"); ok {
			if p := listenPort(t, "the container's --listen", l, true); p != int(httpPort.ContainerPort) {
				t.Errorf("the container runs nexus serve --listen %s; its %s port is %d", l, httpPortName, httpPort.ContainerPort)
			}
		}
		if gw.Metrics != "" {
			mp := namedPort(t, c, metricsPortName)
			if p := listenPort(t, "the ConfigMap's gateway metrics", gw.Metrics, true); p != int(mp.ContainerPort) {
				t.Errorf("the ConfigMap's nexus.hcl serves metrics on %s; the container port %s is %d", gw.Metrics, metricsPortName, mp.ContainerPort)
			}
		}
		// The config file is where the image's --config looks.
		cfgFile, ok := flag(argv, "config")
		if !ok {
			t.Fatal("the container runs nexus serve without --config")
		}
		checkConfigMount(t, m, &pod.Spec, c, cfgFile)

		// More than one replica: the session store must be shared.
		su, err := url.Parse(gw.SessionStore)
		if err != nil || su.Scheme != "redis" && su.Scheme != "rediss" {
			t.Fatalf("the gateway's session_store is %q; with %d replicas it must be redis:// or rediss:// (Redis or Valkey), or each replica keeps its own sessions", store.Name(gw.SessionStore), *d.Spec.Replicas)
		}
		if s := env["NEXUS_SESSION_STORE"]; s == "" || s != gw.SessionStore {
			t.Errorf("session_store does not come from the environment variable NEXUS_SESSION_STORE the Secret fills")
		}
		// It points at the reference Redis, with its password.
		rs, ok := m.services[redisName]
		if !ok {
			t.Fatalf("no Service %s", redisName)
		}
		host := su.Hostname()
		if host != rs.Name && host != rs.Name+"."+rs.Namespace && !strings.HasPrefix(host, rs.Name+"."+rs.Namespace+".svc") {
			t.Errorf("the session store's host is %s; the reference Redis's Service is %s.%s", host, rs.Name, rs.Namespace)
		}
		port := su.Port()
		if port == "" {
			port = "6379"
		}
		if !slices.ContainsFunc(rs.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == port }) {
			t.Errorf("the session store's port %s is none of Service %s's ports", port, rs.Name)
		}
		rd := m.deployments[redisName]
		if rd == nil {
			t.Fatalf("no Deployment %s", redisName)
		}
		renv, err := m.envOf(&rd.Spec.Template.Spec.Containers[0])
		if err != nil {
			t.Fatal(err)
		}
		pw, _ := su.User.Password()
		if pw == "" || pw != renv["REDIS_PASSWORD"] {
			t.Errorf("the session store URL's password is not the Redis Deployment's REDIS_PASSWORD")
		}
		if !slices.Contains(rd.Spec.Template.Spec.Containers[0].Args, "$(REDIS_PASSWORD)") {
			t.Errorf("the Redis container does not take its password from $(REDIS_PASSWORD)")
		}

		// The kubelet waits longer than the gateway's own grace after
		// SIGTERM, plus the preStop pause before it.
		grace := defaultGrace
		if gw.Limits.ShutdownGrace > 0 {
			grace = gw.Limits.ShutdownGrace
		}
		if g, ok := flag(argv, "grace"); ok {
			if grace, err = time.ParseDuration(g); err != nil {
				t.Fatalf("--grace %q: %v", g, err)
			}
		}
		var preStop time.Duration
		if ps := c.Lifecycle; ps != nil && ps.PreStop != nil {
			switch {
			case ps.PreStop.Sleep != nil:
				preStop = time.Duration(ps.PreStop.Sleep.Seconds) * time.Second
			case ps.PreStop.Exec != nil:
				t.Errorf("preStop runs a command; the image has no shell nor sleep: use preStop.sleep")
			}
		}
		tgp := d.Spec.Template.Spec.TerminationGracePeriodSeconds
		if tgp == nil || time.Duration(*tgp)*time.Second <= preStop+grace {
			t.Errorf("terminationGracePeriodSeconds %v is not longer than the preStop pause (%v) plus the gateway's grace (%v)", ptrString(tgp), preStop, grace)
		}
	})

	t.Run("services", func(t *testing.T) {
		for name, svc := range m.services {
			if len(svc.Spec.Selector) == 0 {
				t.Errorf("Service %s has no selector", name)
				continue
			}
			if svc.Spec.Type != "" && svc.Spec.Type != corev1.ServiceTypeClusterIP {
				t.Errorf("Service %s is %s; put an Ingress or a load balancer of your own in front of a ClusterIP", name, svc.Spec.Type)
			}
			var picked []string
			for tname, tmpl := range m.podTemplates() {
				if selectsMap(svc.Spec.Selector, tmpl.Labels) {
					picked = append(picked, tname)
				}
			}
			if len(picked) != 1 || picked[0] != "Deployment "+name {
				t.Errorf("Service %s selects the pods of %v; want Deployment %s's only", name, picked, name)
				continue
			}
			tmpl := m.podTemplates()[picked[0]]
			for _, p := range svc.Spec.Ports {
				if p.TargetPort.Type != intstr.String {
					t.Errorf("Service %s port %s targets %s; name the container port instead", name, p.Name, p.TargetPort.String())
				}
				if _, ok := portOf(p.TargetPort, tmpl.Spec.Containers...); !ok {
					t.Errorf("Service %s port %s targets %s, which no container of Deployment %s has", name, p.Name, p.TargetPort.String(), name)
				}
			}
		}
		svc := m.services[gatewayName]
		if svc == nil {
			t.Fatalf("no Service %s", gatewayName)
		}
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
			cp, ok := portOf(p.TargetPort, *c)
			return ok && cp.ContainerPort == httpPort.ContainerPort
		}) {
			t.Errorf("Service %s does not reach the gateway's port %d", gatewayName, httpPort.ContainerPort)
		}
		if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
			t.Errorf("Service %s pins clients to a replica (sessionAffinity ClientIP); the replicas share sessions, so balance plainly", gatewayName)
		}
	})

	t.Run("pod disruption budget", func(t *testing.T) {
		pdb := m.pdbs[gatewayName]
		if pdb == nil {
			t.Fatalf("no PodDisruptionBudget %s", gatewayName)
		}
		if ok, err := selects(pdb.Spec.Selector, pod.Labels); err != nil || !ok {
			t.Errorf("PodDisruptionBudget %s does not select the gateway's pods (%v)", pdb.Name, err)
		}
		if ok, _ := selects(pdb.Spec.Selector, m.deployments[redisName].Spec.Template.Labels); ok {
			t.Errorf("PodDisruptionBudget %s also selects Redis's pods", pdb.Name)
		}
		switch mu, ma := pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable; {
		case mu != nil && ma != nil:
			t.Errorf("PodDisruptionBudget %s sets both maxUnavailable and minAvailable", pdb.Name)
		case mu != nil:
			if *mu != intstr.FromInt32(1) {
				t.Errorf("PodDisruptionBudget %s: maxUnavailable %s, want 1", pdb.Name, mu.String())
			}
		case ma != nil:
			if ma.Type != intstr.Int || ma.IntVal < 1 || ma.IntVal >= *d.Spec.Replicas {
				t.Errorf("PodDisruptionBudget %s: minAvailable %s; want a number from 1 to replicas-1 (a drain must be able to go on)", pdb.Name, ma.String())
			}
		default:
			t.Errorf("PodDisruptionBudget %s sets neither maxUnavailable nor minAvailable", pdb.Name)
		}
	})

	t.Run("horizontal pod autoscaler", func(t *testing.T) {
		hpa := m.hpas[gatewayName]
		if hpa == nil {
			t.Fatalf("no HorizontalPodAutoscaler %s", gatewayName)
		}
		ref := hpa.Spec.ScaleTargetRef
		if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != d.Name {
			t.Errorf("HorizontalPodAutoscaler %s scales %s %s %s; want apps/v1 Deployment %s", hpa.Name, ref.APIVersion, ref.Kind, ref.Name, d.Name)
		}
		if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 || *hpa.Spec.MinReplicas > *d.Spec.Replicas {
			t.Errorf("HorizontalPodAutoscaler %s: minReplicas %s; want 2 to the Deployment's %d", hpa.Name, ptrString(hpa.Spec.MinReplicas), *d.Spec.Replicas)
		}
		if hpa.Spec.MinReplicas != nil && hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas {
			t.Errorf("HorizontalPodAutoscaler %s: maxReplicas %d < minReplicas %d", hpa.Name, hpa.Spec.MaxReplicas, *hpa.Spec.MinReplicas)
		}
		cpu := false
		for _, mt := range hpa.Spec.Metrics {
			if mt.Resource != nil && mt.Resource.Name == corev1.ResourceCPU && mt.Resource.Target.Type == "Utilization" &&
				mt.Resource.Target.AverageUtilization != nil && *mt.Resource.Target.AverageUtilization > 0 && *mt.Resource.Target.AverageUtilization <= 100 {
				cpu = true
			}
		}
		if !cpu {
			t.Errorf("HorizontalPodAutoscaler %s has no CPU utilization target", hpa.Name)
		}
		if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
			t.Errorf("the gateway container requests no CPU, so the autoscaler cannot measure its utilization")
		}
	})

	t.Run("secrets", func(t *testing.T) {
		used := map[string]bool{}
		for name, tmpl := range m.podTemplates() {
			for _, ct := range tmpl.Spec.Containers {
				if _, err := m.envOf(&ct); err != nil {
					t.Errorf("%s container %s: %v", name, ct.Name, err)
				}
				for _, e := range ct.Env {
					if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
						used[e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key] = true
						if o := e.ValueFrom.SecretKeyRef.Optional; o != nil && *o {
							t.Errorf("%s container %s: env %s's Secret key is optional; a missing secret should stop the pod, not start it without", name, ct.Name, e.Name)
						}
					}
				}
			}
		}
		for name, s := range m.secrets {
			if len(s.Data) > 0 {
				t.Errorf("Secret %s has base64 data; keep the placeholders readable in stringData", name)
			}
			for k, v := range secretData(s) {
				if !strings.Contains(v, changeMe) {
					t.Errorf("Secret %s key %s is not marked %s: a real secret does not belong in the repository", name, k, changeMe)
				}
				if !used[name+"/"+k] {
					t.Errorf("Secret %s key %s is used by no pod", name, k)
				}
				for _, p := range validation.IsConfigMapKey(k) {
					t.Errorf("Secret %s key %s: %s", name, k, p)
				}
			}
		}
		// The tokens the agents present are Secret values, not the
		// ConfigMap's: the config holds none.
		if strings.Contains(m.configMaps["nexus-config"].Data[configMapKey], changeMe) {
			t.Errorf("the ConfigMap's nexus.hcl holds a placeholder secret; secrets belong in the Secret")
		}
	})

	t.Run("security", func(t *testing.T) {
		for name, tmpl := range m.podTemplates() {
			checkRestricted(t, name, &tmpl.Spec)
		}
		// The image's USER is the pod's user.
		u := parseDockerfile(t, dockerfilePath).stages
		user := u[len(u)-1].last(t, "USER")
		uid, _, _ := strings.Cut(user.args, ":")
		sc := pod.Spec.SecurityContext
		if sc == nil || sc.RunAsUser == nil || strconv.FormatInt(*sc.RunAsUser, 10) != uid {
			t.Errorf("the gateway pod's runAsUser is not the image's USER %s", uid)
		}
	})

	t.Run("resources", func(t *testing.T) {
		for name, tmpl := range m.podTemplates() {
			for _, ct := range tmpl.Spec.Containers {
				for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					req, okReq := ct.Resources.Requests[r]
					lim, okLim := ct.Resources.Limits[r]
					if !okReq || !okLim {
						t.Errorf("%s container %s: %s needs both a request and a limit", name, ct.Name, r)
						continue
					}
					if req.Cmp(lim) > 0 {
						t.Errorf("%s container %s: %s request %s is over its limit %s", name, ct.Name, r, req.String(), lim.String())
					}
					if req.Cmp(resource.Quantity{}) <= 0 {
						t.Errorf("%s container %s: %s request is zero", name, ct.Name, r)
					}
				}
			}
		}
	})
}

func checkLabels(t *testing.T, what string, l map[string]string) {
	t.Helper()
	for k, v := range l {
		for _, p := range validation.IsQualifiedName(k) {
			t.Errorf("%s: label key %q: %s", what, k, p)
		}
		for _, p := range validation.IsValidLabelValue(v) {
			t.Errorf("%s: label %s value %q: %s", what, k, v, p)
		}
	}
}

// checkRestricted holds a pod to the settings the brief asks for, which
// are the "restricted" Pod Security Standard's and then some.
func checkRestricted(t *testing.T, name string, spec *corev1.PodSpec) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Errorf("%s shares the node's network, PID or IPC namespace", name)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s mounts a service account token; it talks to no Kubernetes API (automountServiceAccountToken: false)", name)
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("%s mounts the node's %s", name, v.HostPath.Path)
		}
	}
	if psc.RunAsUser != nil && *psc.RunAsUser == 0 {
		t.Errorf("%s runs as root (runAsUser 0)", name)
	}
	if psc.RunAsNonRoot != nil && !*psc.RunAsNonRoot {
		t.Errorf("%s: the pod's runAsNonRoot is false", name)
	}
	if s := psc.SeccompProfile; s != nil && s.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: the pod's seccompProfile is %s, not RuntimeDefault", name, s.Type)
	}
	if len(spec.InitContainers) > 0 || len(spec.EphemeralContainers) > 0 {
		t.Errorf("%s has init or ephemeral containers; check them here too", name)
	}
	for _, c := range spec.Containers {
		what := name + " container " + c.Name
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("%s has no securityContext", what)
			continue
		}
		if !boolTrue(sc.RunAsNonRoot) && !(sc.RunAsNonRoot == nil && boolTrue(psc.RunAsNonRoot)) {
			t.Errorf("%s: runAsNonRoot is not true", what)
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			t.Errorf("%s runs as root (runAsUser 0)", what)
		}
		if !boolTrue(sc.ReadOnlyRootFilesystem) {
			t.Errorf("%s: readOnlyRootFilesystem is not true", what)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: allowPrivilegeEscalation is not false", what)
		}
		if boolTrue(sc.Privileged) {
			t.Errorf("%s is privileged", what)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("%s does not drop ALL capabilities", what)
		} else if len(sc.Capabilities.Add) > 0 {
			t.Errorf("%s adds capabilities %v", what, sc.Capabilities.Add)
		}
		seccomp := sc.SeccompProfile
		if seccomp == nil {
			seccomp = psc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: seccompProfile is not RuntimeDefault", what)
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				t.Errorf("%s binds host port %d", what, p.HostPort)
			}
		}
	}
}

func boolTrue(b *bool) bool { return b != nil && *b }

func ptrString[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// checkConfigMount checks that file (the container's --config) is the
// ConfigMap's nexus.hcl, mounted read-only.
func checkConfigMount(t *testing.T, m *manifests, spec *corev1.PodSpec, c *corev1.Container, file string) {
	t.Helper()
	for _, vm := range c.VolumeMounts {
		if vm.MountPath != path.Dir(file) {
			continue
		}
		if !vm.ReadOnly {
			t.Errorf("the config volume at %s is not mounted readOnly", vm.MountPath)
		}
		for _, v := range spec.Volumes {
			if v.Name != vm.Name {
				continue
			}
			if v.ConfigMap == nil {
				t.Fatalf("volume %s at %s is not a ConfigMap", v.Name, vm.MountPath)
			}
			cm, ok := m.configMaps[v.ConfigMap.Name]
			if !ok {
				t.Fatalf("volume %s names ConfigMap %q, which is not in the manifests", v.Name, v.ConfigMap.Name)
			}
			key := path.Base(file)
			if len(v.ConfigMap.Items) > 0 {
				key = ""
				for _, it := range v.ConfigMap.Items {
					if it.Path == path.Base(file) {
						key = it.Key
					}
				}
			}
			if _, ok := cm.Data[key]; !ok || key != configMapKey {
				t.Errorf("--config %s is not ConfigMap %s's %s (the volume gives key %q there)", file, cm.Name, configMapKey, key)
			}
			return
		}
		t.Fatalf("volume mount %s names no volume", vm.Name)
	}
	t.Errorf("nothing is mounted at %s, where --config %s is", path.Dir(file), file)
}

// loadGatewayConfig loads the ConfigMap's nexus.hcl with the repository's
// config package, in the environment the Deployment gives the container
// (the Secret's placeholder values) and nothing else: a variable the pod
// does not set is an error, as it would be in the pod.
func loadGatewayConfig(t *testing.T, m *manifests, d *appsv1.Deployment, c *corev1.Container) (*config.Config, map[string]string) {
	t.Helper()
	cm, ok := m.configMaps["nexus-config"]
	if !ok {
		t.Fatal("no ConfigMap nexus-config")
	}
	hcl, ok := cm.Data[configMapKey]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s", cm.Name, configMapKey)
	}
	env, err := m.envOf(c)
	if err != nil {
		t.Fatalf("Deployment %s: %v", d.Name, err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, configMapKey)
	if err := os.WriteFile(file, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.Options{
		Files:     []string{file},
		Dir:       dir,
		Home:      dir,
		NoDefault: true,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
	if err != nil {
		t.Fatalf("the ConfigMap's nexus.hcl does not load in the Deployment's environment:\n%v", err)
	}
	for _, w := range cfg.Warnings {
		t.Errorf("the ConfigMap's nexus.hcl: warning: %s", w.Message)
	}
	return cfg, env
}
