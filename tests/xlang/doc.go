// Package xlang runs the cross-language fixtures
// (testdata/golden/<case>/fixtures.json, and testdata/conformance/ for the
// conformance server's contract) through the Go code tiogen generated for
// each: every valid payload decodes and re-encodes to its canonical
// bytes, every invalid one is refused naming the fixture's field path and
// rule. The TypeScript runtime's tests
// (runtime/ts/test/fixtures.test.ts) run the same files through the
// generated TypeScript, so both languages accept, refuse and write the same
// JSON (docs/contract-language.md, "JSON on the wire").
package xlang
