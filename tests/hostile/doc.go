// Package hostile is a raw-frame peer of the conformance server: a
// webtransport-go client and a coder/websocket client that write bytes
// built with runtime/wire directly, with no engine of ours in between,
// break each rule of the protocol and check the server's answer: the §10.2
// close code with a reason that names the problem, or the per-stream answer.
package hostile
