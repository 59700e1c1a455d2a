# tiogen — every target runs from a fresh clone with Go (and Node for the
# browser tests) installed; `make test` is what CI runs.

GO ?= go
RUNTIME_PKGS = ./runtime/...

.PHONY: test test-go test-runtime vet fmt-check generate bench fuzz

test: fmt-check vet test-go test-runtime

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# Everything outside the runtime, without the race detector.
test-go:
	$(GO) test $$($(GO) list ./... | grep -v /runtime/)

# The runtime runs under the race detector (engine goroutines must end after close).
test-runtime:
	$(GO) test -race $(RUNTIME_PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Short fuzzing pass over every fuzz target (FUZZTIME=30s for longer).
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg || exit 1; \
	  done; \
	done
