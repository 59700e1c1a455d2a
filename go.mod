module github.com/transport-io/tiogen

go 1.26.0

// The TypeScript runtime and the browser tests' npm packages hold no Go
// code; node_modules must never be walked by ./...
ignore (
	./runtime/ts
	./tests/browser/node_modules
)

require (
	github.com/alecthomas/participle/v2 v2.1.4
	github.com/coder/websocket v1.8.15
	github.com/dave/jennifer v1.7.1
	github.com/quic-go/quic-go v0.64.1
	github.com/quic-go/webtransport-go v0.13.0
)

require (
	github.com/dunglas/httpsfv v1.1.1 // indirect
	github.com/quic-go/qpack v0.6.0 // indirect
	golang.org/x/crypto v0.54.0 // indirect
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.40.0 // indirect
)
