// Package tio is the transport-io protocol engine: sessions over any
// transport.Conn, with the emit lane (§3.1, §5, §9), calls with credit
// (§3.2, §6.2–§6.6, §8), the datagram lane (§7), rooms (§6.5) and the
// session lifecycle (§4, §11). It works on encoded payload bytes; generated
// code wraps it with typed payloads, validation and handler signatures.
//
// A Server runs one session per accepted Conn (Serve) and answers calls with
// registered handlers. A Client runs one session over a Conn it dialled and
// makes calls. Both emit, send datagrams and receive them.
package tio
