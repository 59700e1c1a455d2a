package conformance

// The generated conformance.tio.go is committed; regenerate it after editing
// the contract with `go generate ./cmd/tio-conformance/conformance` (or
// `make generate`).
//go:generate go run ../../../cmd/tiogen gen --go . ../../../testdata/conformance/conformance.tio
