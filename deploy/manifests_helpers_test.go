package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// manifestDir holds the Kubernetes objects, one or more per file.
const manifestDir = "k8s"

// kinds are the objects the manifests may hold, by apiVersion and kind.
// Anything else is an error: a new kind gets its checks with its entry.
var kinds = map[string]func() metav1.Object{
	"v1/Namespace":                           func() metav1.Object { return &corev1.Namespace{} },
	"v1/Secret":                              func() metav1.Object { return &corev1.Secret{} },
	"v1/ConfigMap":                           func() metav1.Object { return &corev1.ConfigMap{} },
	"v1/Service":                             func() metav1.Object { return &corev1.Service{} },
	"apps/v1/Deployment":                     func() metav1.Object { return &appsv1.Deployment{} },
	"policy/v1/PodDisruptionBudget":          func() metav1.Object { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2/HorizontalPodAutoscaler": func() metav1.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
}

// object is one decoded manifest document.
type object struct {
	where string // file#document, for messages
	kind  string // apiVersion/kind
	obj   metav1.Object
}

func (o object) String() string { return fmt.Sprintf("%s %s (%s)", o.kind, o.obj.GetName(), o.where) }

// manifests is every object under k8s/, decoded strictly.
type manifests struct {
	all         []object
	namespaces  map[string]*corev1.Namespace
	secrets     map[string]*corev1.Secret
	configMaps  map[string]*corev1.ConfigMap
	services    map[string]*corev1.Service
	deployments map[string]*appsv1.Deployment
	pdbs        map[string]*policyv1.PodDisruptionBudget
	hpas        map[string]*autoscalingv2.HorizontalPodAutoscaler
}

// decodeStrict decodes one YAML document into the API type its apiVersion
// and kind name, as strictly as the API server's strict field validation:
// duplicate keys, unknown fields and fields spelled in another case (Go's
// encoding/json would take "containerport" for containerPort) are errors,
// and so is a value of the wrong type. A document with no content (only
// comments) gives nil, nil.
func decodeStrict(doc []byte) (metav1.Object, string, error) {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, "", fmt.Errorf("YAML: %w", err)
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
		return nil, "", nil
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, "", fmt.Errorf("not an object: %w", err)
	}
	kind := tm.APIVersion + "/" + tm.Kind
	newObj, ok := kinds[kind]
	if !ok {
		known := make([]string, 0, len(kinds))
		for k := range kinds {
			known = append(known, k)
		}
		sort.Strings(known)
		return nil, kind, fmt.Errorf("apiVersion/kind %q is none the tests know (%s)", kind, strings.Join(known, ", "))
	}
	obj := newObj()
	strict, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, kind, err
	}
	if len(strict) > 0 {
		return nil, kind, errors.Join(strict...)
	}
	return obj, kind, nil
}

// splitDocuments splits a multi-document YAML file.
func splitDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
}

// loadManifests decodes every *.yaml and *.yml file under dir.
func loadManifests(t *testing.T, dir string) *manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.y*ml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no manifests in %s", dir)
	}
	m := &manifests{
		namespaces:  map[string]*corev1.Namespace{},
		secrets:     map[string]*corev1.Secret{},
		configMaps:  map[string]*corev1.ConfigMap{},
		services:    map[string]*corev1.Service{},
		deployments: map[string]*appsv1.Deployment{},
		pdbs:        map[string]*policyv1.PodDisruptionBudget{},
		hpas:        map[string]*autoscalingv2.HorizontalPodAutoscaler{},
	}
	seen := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := splitDocuments(data)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for i, doc := range docs {
			where := fmt.Sprintf("%s#%d", f, i+1)
			obj, kind, err := decodeStrict(doc)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			if obj == nil {
				continue
			}
			key := kind + " " + obj.GetNamespace() + "/" + obj.GetName()
			if prev, dup := seen[key]; dup {
				t.Errorf("%s: %s is also defined in %s", where, key, prev)
				continue
			}
			seen[key] = where
			m.all = append(m.all, object{where: where, kind: kind, obj: obj})
			switch o := obj.(type) {
			case *corev1.Namespace:
				m.namespaces[o.Name] = o
			case *corev1.Secret:
				m.secrets[o.Name] = o
			case *corev1.ConfigMap:
				m.configMaps[o.Name] = o
			case *corev1.Service:
				m.services[o.Name] = o
			case *appsv1.Deployment:
				m.deployments[o.Name] = o
			case *policyv1.PodDisruptionBudget:
				m.pdbs[o.Name] = o
			case *autoscalingv2.HorizontalPodAutoscaler:
				m.hpas[o.Name] = o
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return m
}

// podTemplates is every pod template in the manifests, by Deployment.
func (m *manifests) podTemplates() map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	for name, d := range m.deployments {
		out["Deployment "+name] = &d.Spec.Template
	}
	return out
}

// container is the container named name in spec.
func container(t *testing.T, spec *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	t.Fatalf("no container %q in the pod", name)
	return nil
}

// portOf resolves a port as probes and Services name it (by number or by
// the name of one of the containers' ports).
func portOf(p intstr.IntOrString, containers ...corev1.Container) (corev1.ContainerPort, bool) {
	for _, c := range containers {
		for _, cp := range c.Ports {
			if p.Type == intstr.String && cp.Name == p.StrVal || p.Type == intstr.Int && cp.ContainerPort == p.IntVal {
				return cp, true
			}
		}
	}
	return corev1.ContainerPort{}, false
}

// namedPort is the container port called name.
func namedPort(t *testing.T, c *corev1.Container, name string) corev1.ContainerPort {
	t.Helper()
	p, ok := portOf(intstr.FromString(name), *c)
	if !ok {
		t.Fatalf("container %q has no port named %q", c.Name, name)
	}
	return p
}

// selects says whether a label selector picks pods with these labels; an
// empty selector (which picks everything) does not count.
func selects(sel *metav1.LabelSelector, podLabels map[string]string) (bool, error) {
	if sel == nil || len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return false, errors.New("the selector is empty")
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, err
	}
	return s.Matches(labels.Set(podLabels)), nil
}

// selectsMap is selects for a Service's selector (a plain map).
func selectsMap(sel map[string]string, podLabels map[string]string) bool {
	return len(sel) > 0 && labels.SelectorFromSet(sel).Matches(labels.Set(podLabels))
}

// envOf is the environment a container gets: plain values, and values
// from the manifests' Secrets and ConfigMaps (secretKeyRef, configMapKeyRef,
// envFrom). A reference to something missing is an error.
func (m *manifests) envOf(c *corev1.Container) (map[string]string, error) {
	env := map[string]string{}
	var errs []error
	for _, ef := range c.EnvFrom {
		switch {
		case ef.SecretRef != nil:
			s, ok := m.secrets[ef.SecretRef.Name]
			if !ok {
				errs = append(errs, fmt.Errorf("envFrom names Secret %q, which is not in the manifests", ef.SecretRef.Name))
				continue
			}
			for k, v := range secretData(s) {
				env[ef.Prefix+k] = v
			}
		case ef.ConfigMapRef != nil:
			cm, ok := m.configMaps[ef.ConfigMapRef.Name]
			if !ok {
				errs = append(errs, fmt.Errorf("envFrom names ConfigMap %q, which is not in the manifests", ef.ConfigMapRef.Name))
				continue
			}
			for k, v := range cm.Data {
				env[ef.Prefix+k] = v
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s, ok := m.secrets[ref.Name]
			if !ok {
				errs = append(errs, fmt.Errorf("env %s names Secret %q, which is not in the manifests", e.Name, ref.Name))
				continue
			}
			v, ok := secretData(s)[ref.Key]
			if !ok {
				errs = append(errs, fmt.Errorf("env %s names key %q of Secret %q, which has no such key", e.Name, ref.Key, ref.Name))
				continue
			}
			env[e.Name] = v
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, ok := m.configMaps[ref.Name]
			if !ok {
				errs = append(errs, fmt.Errorf("env %s names ConfigMap %q, which is not in the manifests", e.Name, ref.Name))
				continue
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				errs = append(errs, fmt.Errorf("env %s names key %q of ConfigMap %q, which has no such key", e.Name, ref.Key, ref.Name))
				continue
			}
			env[e.Name] = v
		}
	}
	return env, errors.Join(errs...)
}

// secretData is a Secret's values, stringData over data as the API server
// merges them.
func secretData(s *corev1.Secret) map[string]string {
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	for k, v := range s.StringData {
		out[k] = v
	}
	return out
}
