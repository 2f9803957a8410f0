# mcpwrap — make targets. `make demo` and `make check` are all a newcomer needs.
GO          ?= go
BIN         := bin/mcpwrap
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
NPM_STAMP   := e2e/node_modules/.installed
UNIT_PKGS    = $(shell $(GO) list ./... | grep -v /e2e)
# --version names the commit even where the toolchain records none (-buildvcs=false, no .git)
COMMIT      := $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -modified)
LDFLAGS     := -X main.buildCommit=$(COMMIT)
export NPM_CONFIG_UPDATE_NOTIFIER = false
export NPM_CONFIG_FUND = false
export NPM_CONFIG_AUDIT = false

.PHONY: build install demo image test race store-procs pg-deps e2e e2e-deps chromium prometheus balancer-deps container-deps lint bench fuzz conformance cross check clean

build: ## the mcpwrap binary, in bin/
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/mcpwrap

install: ## go install the mcpwrap binary, its commit stamped
	$(GO) install -ldflags '$(LDFLAGS)' ./cmd/mcpwrap

demo: build ## a narrated showcase around the built-in demo server
	./$(BIN) demo

image: ## the container image FROM scratch (IMAGE=mcpwrap:dev) from a static binary built here: nothing pulled; podman, else docker
	rm -rf bin/image && mkdir -p bin/image/state
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w $(LDFLAGS)' -o bin/image/mcpwrap ./cmd/mcpwrap
	cp /etc/ssl/certs/ca-certificates.crt bin/image/
	$${ENGINE:-$$(command -v podman || command -v docker)} build --build-arg BINARY=prebuilt -f Dockerfile -t $${IMAGE:-mcpwrap:dev} bin/image

test: pg-deps ## unit tests
	MCPWRAP_REQUIRE_PG=1 $(GO) test -count=1 $(UNIT_PKGS)

race: pg-deps ## unit tests under the race detector
	MCPWRAP_REQUIRE_PG=1 $(GO) test -race -count=1 $(UNIT_PKGS)

# The PostgreSQL store's tests run Debian's PostgreSQL in throwaway clusters
# (internal/pgtest: initdb in a temp dir, as nobody when root); only the
# binaries are needed, no running server.
pg-deps: ## Debian's PostgreSQL, installed when missing (as root)
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then \
	  echo "installing postgresql"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >/dev/null 2>&1 || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql; }; \
	fi

store-procs: ## the state store's 8 processes x 200 updates in full (under -race that test makes 50 each)
	$(GO) test -count=1 -run '^TestConcurrentProcesses$$' ./internal/state

e2e-deps: $(NPM_STAMP) chromium prometheus ## the pinned npm peers (reference servers, inspector, conformance, node 22), Debian's chromium and prometheus

chromium: ## Debian's chromium for the control panel's browser tests, installed when missing
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }

prometheus: ## Debian's prometheus, which TestMetricsScrapedByPrometheus runs, installed when missing
	@command -v prometheus >/dev/null 2>&1 || \
	  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y prometheus; }

$(NPM_STAMP): e2e/package.json e2e/package-lock.json
	cd e2e && npm ci --no-audit --no-fund --loglevel=error
	touch $@

balancer-deps: ## Debian's HAProxy, for the replicas e2e (installed when missing: needs root and apt)
	@command -v haproxy >/dev/null || { apt-get update -qq && apt-get install -y -qq haproxy; }

container-deps: ## Debian's podman (and runc, for hosts whose cgroups crun refuses), for the image e2e (installed when missing)
	@command -v podman >/dev/null && command -v runc >/dev/null || { apt-get update -qq && apt-get install -y -qq podman runc; }

e2e: e2e-deps pg-deps balancer-deps container-deps ## end-to-end tests: the real binary against real clients and servers (conformance aside)
	MCPWRAP_E2E_REQUIRE_NPM=1 MCPWRAP_REQUIRE_PG=1 MCPWRAP_E2E_REQUIRE_HAPROXY=1 MCPWRAP_E2E_REQUIRE_PODMAN=1 $(GO) test -count=1 -timeout 20m -skip '^TestConformance$$' ./e2e/...

conformance: e2e-deps ## the official MCP conformance suite, directly and through mcpwrap --listen
	MCPWRAP_E2E_REQUIRE_NPM=1 $(GO) test -count=1 -timeout 10m -run '^TestConformance$$' -v ./e2e/...

lint: ## gofmt, go vet, staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

bench: build e2e-deps pg-deps ## direct vs a minimal relay vs mcpwrap, and the HTTP hop vs a reverse proxy and supergateway (medians of BENCHCOUNT rounds, the modes taking turns), the remote bridges, the 10k tools/list rewrite, a verdict on the file and the PostgreSQL store
	MCPWRAP_BENCH_ROUNDS=$${BENCHCOUNT:-5} $(GO) test -run '^$$' -bench 'BenchmarkRelay$$|BenchmarkHTTP$$' -benchmem -count=1 -timeout 30m ./e2e | tee bench.out
	$(GO) test -run '^$$' -bench . -skip 'BenchmarkRelay$$|BenchmarkHTTP$$' -benchmem -count=$${BENCHCOUNT:-5} -timeout 30m ./e2e/... | tee -a bench.out
	$(GO) run ./e2e/benchtable < bench.out
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./middleware ./internal/policy
	MCPWRAP_REQUIRE_PG=1 $(GO) test -run '^$$' -bench 'BenchmarkVerdict$$' -count=3 ./internal/pgstore

fuzz: ## every fuzz target for a short while (FUZZTIME=30s each); findings land in testdata/fuzz
	@for pkg in $(UNIT_PKGS); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$target"; \
	    $(GO) test $$pkg -run '^$$' -fuzz "^$$target$$" -fuzztime $${FUZZTIME:-30s} || exit 1; \
	  done; \
	done

cross: ## the binary builds for the other desktop platforms (no cgo)
	@for target in darwin/arm64 darwin/amd64 windows/amd64 linux/arm64; do \
		echo "go build $$target"; \
		CGO_ENABLED=0 GOOS=$${target%/*} GOARCH=$${target#*/} $(GO) build -o /dev/null ./cmd/mcpwrap || exit 1; \
	done

check: lint cross race store-procs e2e conformance ## everything CI runs

clean:
	rm -rf bin bench.out e2e/node_modules
