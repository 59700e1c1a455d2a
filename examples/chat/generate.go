package chat

// The generated chat.tio.go is committed; regenerate it after editing
// chat.tio with `go generate ./examples/chat` (or `make generate`); the
// TypeScript client web/chat.tio.ts is generated beside it.
//go:generate go run ../../cmd/tiogen gen --go . --ts web chat.tio
