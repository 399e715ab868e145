# kruise: build, run, test. `make help` lists the targets.
CARGO ?= cargo
BIN := target/debug/kruise
ADDR ?= 127.0.0.1:9876
ADMIN_ADDR ?= 127.0.0.1:8000

GO_WEBHOOK := target/bench/go-webhook
BENCH_ARGS ?=

.PHONY: help build install run test unit lint fmt certs manifests verify bench bench-servers pgo loadtest callgrind controlplane helm cluster dev image fuzz soak clean

help: ## List targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## Build the kruise binary
	$(CARGO) build --locked

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
install: ## Install the release kruise binary in PREFIX/bin (default /usr/local) with a kubectl-kruise link, for `kubectl kruise`
	$(CARGO) build --locked --release --bin kruise
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 target/release/kruise $(DESTDIR)$(BINDIR)/kruise
	ln -sf kruise $(DESTDIR)$(BINDIR)/kubectl-kruise

run: build ## Serve the webhooks on 127.0.0.1:9876 (dev certs, examples/ as the cluster view)
	@test -f certs/tls.crt || $(BIN) certs --out certs
	$(BIN) serve --standalone --objects-dir examples --cert-dir certs --addr $(ADDR) --admin-addr $(ADMIN_ADDR)

test: lint verify unit ## Lint, check generated files, run every test (what CI runs)

unit: controlplane helm ## Run every test
	$(CARGO) test --locked --workspace --all-targets

controlplane: ## Build the test control plane (Go: etcd, kube-apiserver, controller-manager, scheduler)
	testenv/controlplane/build.sh

helm: ## Build Helm from its Go module for the chart tests: target/tools/helm (once; tools/helm/build.sh)
	tools/helm/build.sh

# kruise-testenv builds the control plane itself when its sources changed (a stamp of their hash),
# so starting the cluster does not relink it every time.
cluster: ## Start the test cluster by hand; prints the kubeconfig path, Ctrl-C stops it
	$(CARGO) run --locked -p kruise-testenv --bin kruise-testenv -- --apply deploy/crds

DEV_REPLICAS ?= 2
dev: build ## The test cluster with kruise running in it as deployed (token, managed certs, Services, webhooks, leader election); prints KUBECONFIG
	$(CARGO) run --locked -p kruise-testenv --bin kruise-testenv -- --apply deploy/namespace.yaml \
		--apply deploy/rbac.yaml --apply deploy/service.yaml --apply deploy/crds --apply webhook-config \
		--kruise $(BIN) --replicas $(DEV_REPLICAS)

lint: ## rustfmt check and clippy with -D warnings
	$(CARGO) fmt --all -- --check
	rustfmt --edition 2024 --check fuzz/src/lib.rs fuzz/fuzz_targets/*.rs
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

fmt: ## Format the sources
	$(CARGO) fmt --all
	rustfmt --edition 2024 fuzz/src/lib.rs fuzz/fuzz_targets/*.rs

certs: build ## Create dev certificates in certs/ (kept while still valid)
	$(BIN) certs --out certs

image: ## Container image: target/image/kruise-VERSION.oci.tar (tools/image.sh: target/pgo/kruise if built, else the static release binary; buildah)
	CARGO="$(CARGO)" tools/image.sh

manifests: build ## Regenerate deploy/crds, webhook-config and the chart's generated templates from the sources
	$(BIN) manifests --root .

verify: build ## Fail when generated files are stale
	$(BIN) manifests --root . --check

bench: ## Criterion benchmarks, then kruise, the Go baseline and the Rust floor side by side
	$(CARGO) bench --locked --bench admission --bench injection
	$(MAKE) loadtest

pgo: ## The release kruise binary optimised with a profile of its admission path: target/pgo/kruise (tools/pgo.sh)
	CARGO="$(CARGO)" tools/pgo.sh

bench-servers: pgo ## Build the servers of the load test (kruise with and without PGO, Go, floor) and the load test (release)
	$(CARGO) build --locked --release --bin kruise --example floor --example loadtest --example loadtest_review_cost
	cd benches/go-webhook && go build -trimpath -o ../../$(GO_WEBHOOK) .

LOADTEST := target/release/examples/loadtest --kruise target/pgo/kruise --kruise-nopgo target/release/kruise \
	--go $(GO_WEBHOOK) --floor target/release/examples/floor --servers kruise,kruise-nopgo,go,floor

loadtest: bench-servers ## Side-by-side load test on /mutate-pod (h2load if installed); BENCH_ARGS passes options
	$(LOADTEST) $(BENCH_ARGS)

callgrind: bench-servers ## Instructions per /mutate-pod request (servers) and per review in-process, under valgrind
	$(LOADTEST) --callgrind 2000 $(BENCH_ARGS)
	target/release/examples/loadtest_review_cost --callgrind

FUZZ_SECONDS ?= 60
fuzz: ## Every fuzz target for FUZZ_SECONDS each (cargo-fuzz on nightly, installed when missing); see fuzz/README.md
	@command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install --locked cargo-fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh

SOAK_SECONDS ?= 600
soak: controlplane ## Admission soak: two replicas through their Service, cert renewal, CA rotation, restarts (SOAK_SECONDS, default 600)
	SOAK_SECONDS=$(SOAK_SECONDS) $(CARGO) test --locked --test soak -- --ignored --nocapture

clean:
	$(CARGO) clean
