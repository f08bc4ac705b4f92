// Package deploy holds what it takes to run the Nexus gateway (nexus serve)
// as several replicas, and the tests that keep it honest without a cluster:
//
//   - Dockerfile: a static nexus (CGO_ENABLED=0, -trimpath) on a distroless
//     base, run as a numeric non-root user, serving on port 8750.
//   - k8s/: the Kubernetes objects for a three-replica gateway (Namespace,
//     Secret, ConfigMap with the gateway's nexus.hcl, Deployment, Service,
//     PodDisruptionBudget, HorizontalPodAutoscaler) and a reference Redis
//     that the replicas share sessions through.
//   - nginx/nexus.conf: nginx in front of three replicas on one machine;
//     systemd/nexus@.service runs them.
//
// The tests decode every manifest strictly into the Kubernetes API types
// (a misspelled field fails), load the ConfigMap's nexus.hcl with the
// repository's config package and the environment the Deployment gives
// it, and check that probes, ports, selectors, Secret keys and security
// settings agree with each other and with the gateway (internal/gateway's
// paths, host/mcp's body limit). They check the nginx configuration and
// the Dockerfile textually, nginx -t where nginx is installed, and, unless
// -short, build nexus as the Dockerfile does and run it as the image would.
//
// This is its own module so that the Kubernetes API packages stay out of
// the main module; it follows the main module through a replace directive.
package deploy
