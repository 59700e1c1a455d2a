# tiogen — every target runs from a fresh clone with Go (and Node for the
# browser tests) installed; `make test` is what CI runs.

GO ?= go
# The runtime and the suites that drive it over real transports run under
# the race detector (engine goroutines must end after close).
RACE_PKGS = ./runtime/... ./tests/...

.PHONY: soak churn test test-nats test-browser-targets deps test-ts chromium firefox-esr test-go test-runtime vet fmt-check generate chat-web check-generated golden bench bench-system bench-targets bench-nats bench-browser bench-browser-targets bench-peers fuzz

# The NATS scale-out targets, then the browser runtime's throughput targets,
# run last, alone (the recipe starts once every prerequisite has finished,
# even under -j): they are timings.
test: deps fmt-check vet test-go test-runtime test-ts
	$(MAKE) --no-print-directory test-nats
	$(MAKE) --no-print-directory test-browser-targets

# What the browser tests need: playwright-core pinned in
# tests/browser/package-lock.json, the runtime's pinned dev dependencies
# (esbuild bundles it for the pages), and Debian's Chromium and Firefox ESR
# (never a browser downloaded by a test tool).
deps: tests/browser/node_modules/.package-lock.json runtime/ts/node_modules/.package-lock.json chromium firefox-esr

tests/browser/node_modules/.package-lock.json: tests/browser/package-lock.json
	npm ci --prefix tests/browser --no-audit --no-fund

runtime/ts/node_modules/.package-lock.json: runtime/ts/package-lock.json
	npm ci --prefix runtime/ts --no-audit --no-fund

chromium:
	@if [ -x "$${CHROMIUM:-/usr/bin/chromium}" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then apt-get update && apt-get install -y chromium; \
	else echo "The browser tests need Debian's Chromium: sudo apt-get install chromium (or set CHROMIUM=/path)"; exit 1; fi

firefox-esr:
	@if [ -x "$${FIREFOX:-/usr/bin/firefox-esr}" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then apt-get update && apt-get install -y firefox-esr; \
	else echo "The browser tests need Debian's Firefox ESR: sudo apt-get install firefox-esr (or set FIREFOX=/path)"; exit 1; fi

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# Everything else (language, generators, examples), without it.
test-go:
	$(GO) test $$($(GO) list ./... | grep -v -e /runtime/ -e /tests/)

# The allocation budgets are exact only without the race detector (its
# sync.Pool drops one Put in four), so they run once more without it; so do
# 500 simultaneous WebTransport dials, which under it starve the handshakes
# of CPU.
test-runtime:
	$(GO) test -race $(RACE_PKGS)
	$(GO) test -count=1 -run 'Allocations' ./runtime/tio
	$(GO) test -count=1 -run Allocates ./runtime/transport/websocket/
	TIO_BURST=500 $(GO) test -count=1 -run '^TestSimultaneousWebTransportDialsAreAllEstablished$$' ./tests/soak

# The TypeScript runtime (runtime/ts): its pinned tools from
# package-lock.json (the rule under deps), the build (tsc to dist/ with .d.ts), the type checks with
# TypeScript 5.9, 6.0 and 7.0, and the Node unit tests.
test-ts: runtime/ts/node_modules/.package-lock.json
	cd runtime/ts && npm run --silent build && node --import tsx --test test/*.test.ts

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Whole-system figures over real QUIC and WebSocket on 127.0.0.1, each
# against the raw transport in the same run.
bench-system:
	$(GO) run ./cmd/tio-bench -scenario all

# The targets tio-bench can judge against raw in one run, failing when one
# is missed: emits (WebTransport 64 B ≥ 0.95 and 1 KiB ≥ 0.9 of raw,
# WebSocket ≥ 0.8), calls (≥ 0.95 of raw, p99 ≤ 1.2 of raw, 1 and 64
# callers), idle memory (HeapInuse per session ≤ 1.1 of raw on WebTransport,
# ≤ 1.5 on WebSocket) and sequential WebTransport setup (≥ 0.95 of raw).
# docs/performance.md records the misses it reports today (one caller's
# calls/s, setup) and why. Timing on a shared host is noisy, so this runs on
# demand, not in test.
bench-targets:
	$(GO) run ./cmd/tio-bench -scenario wt-emit,ws-emit -runs 15 -check
	$(GO) run ./cmd/tio-bench -scenario wt-call,wt-idle,ws-idle,wt-setup -runs 5 -check

# The NATS scale-out targets (cross-host p50 ≤ 200 µs, p99 ≤ 2 ms at
# 10 k broadcasts/s, ≥ 0.5 of raw nats.go saturated, ordinal claim ≤ 20 ms,
# reconnect ≤ 250 ms), each beside raw nats.go in the same attempt, failing
# when one is missed. -realtime: the latency figures at real-time priority
# (needs root), as otherwise any busy process, even at nice 19, delays both
# sides' wake-ups by milliseconds, and with every core kept awake, as a
# virtual machine's halted core takes a host tick to wake.
BENCH_NATS = $(GO) run ./cmd/tio-bench -scenario nats-broadcast -sizes 100,1024 -duration 2s -runs 3 -check -realtime
bench-nats:
	$(BENCH_NATS)

# In test: a miss that raw nats.go shared in the same attempt is the host's
# noise, so the attempt is measured again (at most 3 in all, then it fails
# saying the host was too noisy); a miss raw did not share fails at once.
test-nats:
	$(BENCH_NATS) -attempts 3

# The TypeScript runtime in headless Chromium against the Go server, each
# figure beside a raw WebTransport page in the same run (median of 5).
# TIO_CPU_PROFILE=<dir> adds a CPU profile of each page per measurement
# (node tests/browser/profile-summary.mjs <dir> summarises them).
bench-browser: deps
	TIO_BENCH_BROWSER=1 $(GO) test -count=1 -run '^TestBenchBrowser$$' -v ./tests/browser

# The same, judged: each kind alone in a page of its own, the median of 15
# paired runs, failing when a rate is under 0.8 of the raw page's.
BENCH_BROWSER_TARGETS = TIO_BENCH_BROWSER=1 TIO_BENCH_CHECK=1 TIO_BENCH_RUNS=15 \
	$(GO) test -count=1 -run '^TestBenchBrowser$$' -v ./tests/browser
bench-browser-targets: deps
	for kind in emit calls stream datagrams; do \
	  TIO_BENCH_ONLY=$$kind $(BENCH_BROWSER_TARGETS) || exit 1; \
	done

# In test, last and alone (they are timings): a kind that misses is
# measured again, each attempt judged alone, and fails after 3 attempts.
# On this 2-core host one invocation's median moves by ±0.05 with the
# host's scheduling; a runtime well under the target misses all three.
test-browser-targets: deps
	@for kind in emit calls stream datagrams; do \
	  for attempt in 1 2 3; do \
	    TIO_BENCH_ONLY=$$kind $(BENCH_BROWSER_TARGETS) && continue 2; \
	    echo "test-browser-targets: $$kind under the 0.8 target in attempt $$attempt of 3"; \
	  done; \
	  exit 1; \
	done

# tiogen against the peers users would otherwise pick (centrifuge, and
# socket.io where Node is present), next to the raw transports, in one run.
# It reports; it has no targets and is not part of test.
bench-peers: cmd/tio-bench/socketio/node_modules/.package-lock.json
	$(GO) run ./cmd/tio-bench -scenario peers

# socket.io and socket.io-client, pinned for the bench only.
cmd/tio-bench/socketio/node_modules/.package-lock.json: cmd/tio-bench/socketio/package-lock.json
	npm ci --prefix cmd/tio-bench/socketio --no-audit --no-fund

# The endurance runs on demand (make test runs 2 minutes of soak with 24
# sessions and a few hundred churn cycles, under the race detector): 30
# minutes of mixed load with churn and hostile peers over 500 sessions
# (SESSIONS; each session's iterations and life slowed by SESSIONS/24, so the
# traffic and setups a second stay those of 24), and 10,000
# connect/handshake/close cycles and 10,000 drops without a close per
# mapping, both without the race
# detector, which inflates memory.
SOAK ?= 30m
SESSIONS ?= 500
soak:
	TIO_SOAK=$(SOAK) TIO_SOAK_SESSIONS=$(SESSIONS) $(GO) test -count=1 -timeout 0 -run '^TestSoak' -v ./tests/soak

churn:
	TIO_CHURN=10000 $(GO) test -count=1 -timeout 0 -run '^TestChurn' -v ./tests/soak

# Short fuzzing pass over every fuzz target (FUZZTIME=30s for longer).
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg || exit 1; \
	  done; \
	done

# Regenerate every committed generated file: the Go and TypeScript APIs of
# the example and of the conformance contract, the Go and TypeScript goldens
# of every case, the checker goldens, and the chat example's page bundle.
generate: runtime/ts/node_modules/.package-lock.json
	$(GO) generate ./examples/chat ./cmd/tio-conformance/conformance
	$(MAKE) --no-print-directory chat-web
	$(GO) test ./gen/golang ./gen/typescript -run 'TestGolden$$' -update
	$(GO) test ./cmd/tiogen -run 'TestGolden$$' -update

# The chat example's page (examples/chat/web): main.ts and the generated
# client bundled by the runtime's pinned esbuild into dist/app.js, which is
# committed and embedded, so `go run ./examples/chat/server` needs no npm
# step. Minified with no comments: the same sources give the same bytes from
# any working directory.
chat-web: runtime/ts/node_modules/.package-lock.json
	runtime/ts/node_modules/.bin/esbuild examples/chat/web/main.ts --bundle --format=esm --target=es2022 \
	  --minify --legal-comments=none --charset=utf8 --log-level=warning --outfile=examples/chat/web/dist/app.js

# What a user's CI runs: regenerate, then fail on any difference.
check-generated: generate
	git diff --exit-code
	@test -z "$$(git status --porcelain --untracked-files=all -- examples gen testdata cmd runtime/ts/test tests)" || \
	  { echo "generated files not committed:"; git status --porcelain -- examples gen testdata cmd runtime/ts/test tests; exit 1; }

# Rewrite every golden file after an intended change (a plain test run
# fails on any difference).
golden:
	$(GO) test ./gen/golang ./gen/typescript ./cmd/tiogen -run 'TestGolden$$' -update
