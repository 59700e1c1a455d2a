package chat

// The generated chat.tio.go is committed; regenerate it after editing
// chat.tio with `go generate ./examples/chat` (or `make generate`).
//go:generate go run ../../cmd/tiogen gen --go . chat.tio
