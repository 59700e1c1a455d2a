// Package integration runs Go clients against the conformance server over
// real QUIC and real WebSocket on 127.0.0.1: every lane and every event of
// testdata/conformance/conformance.tio, and clients in processes of their
// own whose close must arrive before they exit.
package integration
