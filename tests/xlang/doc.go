// Package xlang runs the cross-language fixtures
// (testdata/golden/<case>/fixtures.json, and testdata/conformance/ for the
// conformance server's contract) through the Go code tiogen generated for
// each: every valid payload decodes and re-encodes to its canonical
// bytes, every invalid one is refused naming the fixture's field path and
// rule. The TypeScript runtime's tests
// (runtime/ts/test/fixtures.test.ts) run the same files through the
// generated TypeScript, so both languages accept, refuse and write the same
// JSON (docs/contract-language.md, "JSON on the wire").
//
// It also reads a seeded corpus of payloads for every type with fixtures
// (the fixtures mutated, and values built from each type at the rules'
// edges) through the generated Go and, in Node, the generated TypeScript
// (runtime/ts/test/xlang/payload-verdicts.ts), and fails on any payload the
// two accept, refuse or write differently.
//
// It also reads a seeded corpus of hostile wire inputs (frame streams,
// datagrams, handshakes, control payloads) through the Go wire readers and,
// in Node, through the TypeScript ones (runtime/ts/test/xlang), and fails
// on any input the two read differently. Both corpora need Node and
// runtime/ts/node_modules (make deps), and fail without them.
package xlang
