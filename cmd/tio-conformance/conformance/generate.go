package conformance

// The generated conformance.tio.go is committed; regenerate it after editing
// the contract with `go generate ./cmd/tio-conformance/conformance` (or
// `make generate`). It also writes the contract's TypeScript,
// runtime/ts/test/node-go/conformance.tio.ts, which the Node and browser
// suites of the TypeScript runtime use.
//go:generate go run ../../../cmd/tiogen gen --go . --ts ../../../runtime/ts/test/node-go ../../../testdata/conformance/conformance.tio
