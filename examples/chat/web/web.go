// Package web is the chat example's page: index.html and dist/app.js, the
// bundle esbuild builds from main.ts and the generated chat.tio.ts (`make
// generate`; `make check-generated` fails when the committed bundle is not
// what the build writes). It is embedded, so `go run ./examples/chat/server`
// serves the page without an npm step.
package web

import (
	"embed"
	"net/http"
)

//go:embed index.html dist/app.js
var files embed.FS

// Handler serves the page: / is index.html, /dist/app.js the bundle.
func Handler() http.Handler { return http.FileServerFS(files) }
