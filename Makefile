# Nexus — the two commands a newcomer needs are `make run` and `make test`.
GO      ?= go
BIN     := bin/nexus
NPM_DIR := tools/npm
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 10s

.PHONY: all build run test testdeps conformance bench fuzz lint crossbuild clean cover man soak release-snapshot release-check release-tools

all: build

# Man pages for every command, from the command tree: bin/man/*.1
# (man -l bin/man/nexus-call.1).
man:
	$(GO) test ./cmd/nexus -run '^TestManPages$$' -count=1 -args -man=$(CURDIR)/bin/man

# Binaries and vet are built as a release builds them: static
# (CGO_ENABLED=0; Nexus has no cgo) and with -trimpath. One variant of
# every compiled package then serves make build, vet, the binaries the
# tests run (internal/testenv.Build) and the release check's goreleaser
# build; the race detector's tests (which need cgo) are the only other.
# On a cold machine each extra variant was minutes of compiling.
NOCGO := CGO_ENABLED=0
STATIC_BUILD := $(NOCGO) $(GO) build -trimpath
STATIC_VET := $(NOCGO) $(GO) vet -trimpath

# -buildvcs=auto stamps the commit (nexus version) even where GOFLAGS
# turns stamping off; outside a git checkout it is left out quietly.
build:
	$(STATIC_BUILD) -buildvcs=auto -o $(BIN) ./cmd/nexus

# The main job on the default config (./nexus.hcl, also built in): the
# built-in test server over stdio. Its command is `nexus`, found in bin/.
# The config is named with --config: a nexus.hcl found in the working
# directory is a workspace config, which runs nothing until `nexus trust`.
run: build
	PATH="$(CURDIR)/bin:$$PATH" $(BIN) --config nexus.hcl tools
	PATH="$(CURDIR)/bin:$$PATH" $(BIN) --config nexus.hcl call --yes testserver.echo message="hello from nexus"

# Real MCP servers from npm that the integration tests run against, and
# the OPA compiler the Rego filter tests build their policies with
# (bin/tools/opa, from the Go module proxy; a minute on a cold cache).
OPA_VERSION := v1.22.2
testdeps: $(NPM_DIR)/node_modules/.installed bin/tools/opa-$(OPA_VERSION) debs

# Debian packages the tests run (their packaged daemons are never used;
# each test starts its own on loopback and stops it by PID):
# - redis-server: the session store's tests;
# - nginx: the replicas tests put it in front of the gateway's replicas;
# - chromium: the console's tests drive it headless (chromedp) and run
#   axe-core (npm) in it.
# One apt-get for all that are missing (apt cannot run twice at once, and
# testdeps runs its parts in parallel). /usr/sbin is often not on an
# ordinary user's PATH.
.PHONY: debs
debs:
	@missing=""; \
	command -v redis-server >/dev/null || command -v valkey-server >/dev/null || missing="$$missing redis-server"; \
	command -v nginx >/dev/null || test -x /usr/sbin/nginx || missing="$$missing nginx"; \
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || missing="$$missing chromium"; \
	[ -z "$$missing" ] || { echo "installing$$missing (apt-get)"; \
	  (apt-get install -y --no-install-recommends $$missing >/dev/null 2>&1 || \
	   (apt-get update >/dev/null && apt-get install -y --no-install-recommends $$missing >/dev/null)) || \
	  { echo "cannot install$$missing: run apt-get install -y$$missing as root"; exit 1; }; }

bin/tools/opa-$(OPA_VERSION):
	@mkdir -p bin/tools/opa-build
	GOBIN=$(CURDIR)/bin/tools/opa-build GOFLAGS= $(GO) install github.com/open-policy-agent/opa@$(OPA_VERSION)
	mv bin/tools/opa-build/opa $@
	ln -sf opa-$(OPA_VERSION) bin/tools/opa

$(NPM_DIR)/node_modules/.installed: $(NPM_DIR)/package.json $(NPM_DIR)/package-lock.json
	cd $(NPM_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The official MCP conformance suite (tools/npm, run on its Node 22) against
# Nexus's client (internal/cmd/conformance-client: every scored client
# scenario of --requirements 2026-07-28 and 2025-11-25) and as a server: the
# built-in test server and the gateway in front of it (examples/
# conformance-server: every scored server scenario of both revisions). Any
# failed check or warning in a scored scenario fails this and prints the
# suite's report.
# The four runs go at once (each on its own port-0 server and results
# directory; they mostly wait on the suite's scenarios), each one's report
# printed whole when it ends.
CONFORMANCE_SERVER_MODES := testserver gateway gateway-legacy
conformance: testdeps build
	$(call step,conformance suite: client + $(CONFORMANCE_SERVER_MODES))
	@$(MAKE) --no-print-directory -j4 --output-sync=target conformance-client $(addprefix conformance-server-,$(CONFORMANCE_SERVER_MODES))

.PHONY: conformance-client $(addprefix conformance-server-,$(CONFORMANCE_SERVER_MODES))
conformance-client:
	$(STATIC_BUILD) -o bin/conformance-client ./internal/cmd/conformance-client
	bash internal/cmd/conformance-client/run.sh "$(CURDIR)/bin/conformance-client"
$(addprefix conformance-server-,$(CONFORMANCE_SERVER_MODES)): conformance-server-%:
	bash examples/conformance-server/run.sh "$(CURDIR)/$(BIN)" $*

# Everything: vet, all tests with the race detector, the benchmark module's
# tests, the conformance suite, and a type check of every package for
# Windows and macOS.
# Each step of make test says when it starts, so a slow CI run shows where
# its time went.
step = @echo "== $(1) ($$(date -u +%T))"

# The release check (release-check, below) runs beside the test steps at
# the lowest CPU priority (tools/beside.sh): on a cold machine it first
# compiles goreleaser, minutes of CPU that the tests' idle moments absorb.
# A failure of either fails make test; the check's output is in
# bin/release-check-all.log.
#
# The first steps run at once (make -j, each one's output kept together):
# npm ci mostly waits on the network and the disk (minutes on a fresh
# machine) while the OPA compile, the type check, the nexus build and vet
# keep the CPUs busy.
test:
	$(call step,at once: npm packages + Debian packages + OPA + type check + build + vet)
	@$(MAKE) --no-print-directory -j6 --output-sync=target testdeps crossbuild build vet
	@$(MAKE) --no-print-directory conformance
	@tools/beside.sh bin/release-check-all.log '$(MAKE) --no-print-directory release-check' -- $(MAKE) --no-print-directory test-steps

.PHONY: test-steps
test-steps:
	# Every benchmark runs once beside the tests, in the same race-built
	# test binaries (-bench . -benchtime 1x), so one that no longer runs (a
	# moved testdata path, a peer that changed) fails here rather than when
	# its figures are next needed. A separate non-race smoke run compiled
	# and linked every test binary a second time: minutes on a cold machine.
	$(call step,tests and every benchmark once with the race detector)
	$(GO) test -race -count=1 -timeout 20m -bench . -benchtime 1x ./...
	$(call step,bench and deploy modules)
	# The bench module follows the main module through a replace directive;
	# -mod=mod lets it pick up the main module's new requirements by itself.
	# Both build their shared dependencies at the main module's versions
	# (internal/arch TestModulesAgree), so the race build above is reused.
	cd bench && GOFLAGS=-mod=mod $(STATIC_VET) ./... && GOFLAGS=-mod=mod $(GO) test -race -count=1 -timeout 10m -bench . -benchtime 1x ./...
	# The deploy module (Dockerfile, Kubernetes manifests decoded strictly,
	# nginx) follows the main module the same way.
	cd deploy && GOFLAGS=-mod=mod $(STATIC_VET) ./... && GOFLAGS=-mod=mod $(GO) test -race -count=1 -timeout 10m ./...

# ---- Release build (.goreleaser.yaml): static binaries of nexus and the
# plugins for linux/darwin/windows x amd64/arm64, the WASM filters, archives,
# checksums and a CycloneDX SBOM of each nexus binary, into bin/dist. No
# publishing: a release is this plus a tag. goreleaser and cyclonedx-gomod
# are pinned here and built from the Go module proxy into bin/tools (a few
# minutes on a cold cache, once).
GORELEASER_VERSION := v2.15.1
CYCLONEDX_VERSION  := v1.10.0
bin/tools/goreleaser-$(GORELEASER_VERSION):
	@mkdir -p bin/tools/goreleaser-build
	GOBIN=$(CURDIR)/bin/tools/goreleaser-build GOFLAGS= $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)
	mv bin/tools/goreleaser-build/goreleaser $@
	ln -sf goreleaser-$(GORELEASER_VERSION) bin/tools/goreleaser
bin/tools/cyclonedx-gomod-$(CYCLONEDX_VERSION):
	@mkdir -p bin/tools/cyclonedx-build
	GOBIN=$(CURDIR)/bin/tools/cyclonedx-build GOFLAGS= $(GO) install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_VERSION)
	mv bin/tools/cyclonedx-build/cyclonedx-gomod $@
	ln -sf cyclonedx-gomod-$(CYCLONEDX_VERSION) bin/tools/cyclonedx-gomod
release-tools: bin/tools/goreleaser-$(GORELEASER_VERSION) bin/tools/cyclonedx-gomod-$(CYCLONEDX_VERSION) bin/tools/opa-$(OPA_VERSION)

# Every platform (bin/dist).
release-snapshot: release-tools
	PATH="$(CURDIR)/bin/tools:$$PATH" bin/tools/goreleaser release --snapshot --clean

# make test's share: the config checks, and this machine's platform is
# built by the same pipeline (the config with every goos/goarch list cut to
# this platform, bin/goreleaser-one.yaml) and then checked: the archive,
# its checksum, `nexus version`, make run's call, the SBOM
# (internal/cmd/releasecheck).
HOST_GOOS   := $(shell $(GO) env GOOS)
HOST_GOARCH := $(shell $(GO) env GOARCH)
release-check: release-tools
	$(call step,release check: goreleaser check and a $(HOST_GOOS)/$(HOST_GOARCH) snapshot)
	bin/tools/goreleaser check
	sed -e 's/^\( *goos:\).*/\1 [$(HOST_GOOS)]/' -e 's/^\( *goarch:\).*/\1 [$(HOST_GOARCH)]/' .goreleaser.yaml > bin/goreleaser-one.yaml
	PATH="$(CURDIR)/bin/tools:$$PATH" bin/tools/goreleaser release --snapshot --clean --config bin/goreleaser-one.yaml > bin/release-check.log 2>&1 || { cat bin/release-check.log; exit 1; }
	$(GO) run ./internal/cmd/releasecheck -dist bin/dist -config nexus.hcl

# Windows and macOS code keeps building: every package and all it imports
# type-checked from source for those targets (internal/cmd/typecheck). The
# compiler's front end finds what a cross build would, without generating
# code: seconds, where two cold cross compiles took most of CI's time.
.PHONY: vet
vet:
	$(call step,vet)
	$(STATIC_VET) ./...

crossbuild:
	$(call step,crossbuild: type-check every package for windows/amd64 and darwin/arm64)
	$(STATIC_BUILD) -o bin/typecheck ./internal/cmd/typecheck
	bin/typecheck -goos windows -goarch amd64 ./...
	bin/typecheck -goos darwin -goarch arm64 ./...

bench: testdeps
	$(GO) test -run='^$$' -bench=. -benchmem ./...
	cd bench && GOFLAGS=-mod=mod $(GO) test -run='^$$' -bench=. -benchmem ./...

# The end-to-end benchmarks, their figures written into README.md's
# bench-report section (minutes: every benchmark runs three times).
.PHONY: bench-report
bench-report: testdeps bench-toolhive
	$(GO) run ./internal/cmd/benchreport -readme README.md

# The Go gateway peer of bench BenchmarkToolHive (build tag toolhive, so
# make test's one run of every benchmark neither needs nor runs it): Stacklok's ToolHive
# thv, pinned and built from the Go module proxy into bin/tools (later
# versions need Go 1.27; minutes on a cold cache, once), and Debian's
# podman, whose API socket thv's container-runtime check needs before
# it proxies anything (the benchmark runs its own `podman system
# service` on a socket of its own; no container is started).
THV_VERSION := v0.47.0
.PHONY: bench-toolhive podman
bench-toolhive: bin/tools/thv-$(THV_VERSION) podman
bin/tools/thv-$(THV_VERSION):
	@mkdir -p bin/tools/thv-build
	GOBIN=$(CURDIR)/bin/tools/thv-build GOFLAGS= $(GO) install github.com/stacklok/toolhive/cmd/thv@$(THV_VERSION)
	mv bin/tools/thv-build/thv $@
	ln -sf thv-$(THV_VERSION) bin/tools/thv
podman:
	@command -v podman >/dev/null || \
		{ echo "installing podman (apt-get)"; \
		  (apt-get install -y podman >/dev/null 2>&1 || \
		   (apt-get update >/dev/null && apt-get install -y podman >/dev/null)) || \
		  { echo "cannot install podman: run apt-get install -y podman as root"; exit 1; }; }

# The soak: 10,000 sessions of three agents (one flooding) over 10 minutes
# against two replicas sharing Redis, with an upstream server, Redis and a
# replica killed on the way; it fails when a call goes unaudited or the
# flood locks the others out, and writes its table into README.md. Not part
# of make test, which runs a 12-second one (internal/cmd/soak TestShortSoak).
# SOAK_FLAGS=-duration=2m for a shorter run.
SOAK_FLAGS ?=
.PHONY: soak
soak: debs build
	$(GO) run ./internal/cmd/soak -nexus $(BIN) -readme README.md $(SOAK_FLAGS)

# A short run of every fuzz target in the module.
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
		pkg=./$$(dirname $$f); \
		for t in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | sed 's/^func //'); do \
			echo "== $$pkg $$t"; \
			$(GO) test -run='^$$' -fuzz="^$$t$$" -fuzztime=$(FUZZTIME) $$pkg; \
		done; \
	done

# Coverage of every package (not part of make test): bin/cover.out, a
# per-function summary, and bin/cover.html to read the gaps in.
cover: testdeps
	@mkdir -p bin
	$(GO) test -count=1 -covermode=atomic -coverprofile=bin/cover.out ./...
	$(GO) tool cover -func=bin/cover.out | tail -n 1
	$(GO) tool cover -html=bin/cover.out -o bin/cover.html
	@echo "cover: bin/cover.html"

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run $(STATICCHECK) ./...

clean:
	rm -rf bin

# ---- go-plugin plugins (sdk/plugin, plugins/<name>)
.PHONY: proto plugins
PLUGINS            := transport-websocket transport-ssh policy-ratelimit
PROTOC_GEN_GO      := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

# Regenerate internal/pluginwire/*.pb.go from the public plugin contract,
# sdk/plugin/proto/plugin.proto. The generated code is committed, so only a
# change to the .proto needs this (internal/pluginwire's
# TestGeneratedMatchesProto fails until it is run). protoc comes from Debian
# (apt-get install -y protobuf-compiler); its Go generators are pinned and
# run through the module proxy with go run.
proto:
	@command -v protoc >/dev/null || { echo "protoc not found; install it: apt-get install -y protobuf-compiler"; exit 1; }
	@mkdir -p bin/tools
	@printf '#!/bin/sh\nexec $(GO) run $(PROTOC_GEN_GO) "$$@"\n' > bin/tools/protoc-gen-go
	@printf '#!/bin/sh\nexec $(GO) run $(PROTOC_GEN_GO_GRPC) "$$@"\n' > bin/tools/protoc-gen-go-grpc
	@chmod +x bin/tools/protoc-gen-go bin/tools/protoc-gen-go-grpc
	cd internal/pluginwire && protoc -I ../../sdk/plugin/proto \
		--plugin=protoc-gen-go=$(CURDIR)/bin/tools/protoc-gen-go \
		--plugin=protoc-gen-go-grpc=$(CURDIR)/bin/tools/protoc-gen-go-grpc \
		--go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative \
		plugin.proto

# Build the first-party plugins into bin/plugins and print the sha256 each
# plugin block pins. The host hashes a plugin's whole binary before every
# launch, so size is start-up time: stripped (-s -w) and without gRPC's
# x/net/trace pages (grpcnotrace) it is 12.5 MB instead of 19; static
# (CGO_ENABLED=0) it starts without the dynamic loader; -trimpath gives the
# same checksum for the same source. plugintest.BuildFlags are the same.
PLUGIN_BUILD := CGO_ENABLED=0 $(GO) build -trimpath -tags grpcnotrace -ldflags="-s -w"
plugins:
	@mkdir -p bin/plugins
	@for p in $(PLUGINS); do $(PLUGIN_BUILD) -o bin/plugins/$$p ./plugins/$$p || exit 1; done
	@cd bin/plugins && sha256sum $(PLUGINS)

# ---- WASM filters (sdk/filter, filters/<name>)
.PHONY: filters
FILTERS := deny-destructive redact-secrets tool-allowlist spotlight tool-poisoning

# Build the first-party WASM filters into bin/filters and print the sha256
# each filter block pins. The standard Go toolchain is all it takes; tests
# build the modules they need themselves, so make test does not need this.
# The Rego example (filters/rego-guard) is compiled by OPA into a bundle.
filters: bin/tools/opa-$(OPA_VERSION)
	@mkdir -p bin/filters
	@for f in $(FILTERS); do GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -buildmode=c-shared -o bin/filters/$$f.wasm ./filters/$$f || exit 1; done
	bin/tools/opa build -t wasm -e nexus/guard/decision -o bin/filters/rego-guard.tar.gz filters/rego-guard/policy.rego
	@cd bin/filters && sha256sum $(addsuffix .wasm,$(FILTERS)) rego-guard.tar.gz
