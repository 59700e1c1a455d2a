// Package parity runs the engine (runtime/tio) over both real mappings, a
// WebTransport listener on 127.0.0.1 and the WebSocket mapping mounted on the
// same listener's HTTPS side, from one table of behaviours (TestSpec3_3_Parity),
// so the two cannot drift apart. Beside the table: the tests that belong to
// the WebSocket mapping alone (§2, §7.6 reliability refusal) and the client's
// fallback between the two (§10.3).
package parity
