package webtransport

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/transport-io/tiogen/runtime/wire"
)

// boundPorts are the UDP socket for QUIC and the TCP listener for HTTPS,
// bound to the same address and port.
type boundPorts struct {
	udp *net.UDPConn
	tcp net.Listener
}

func (b boundPorts) close() {
	if b.udp != nil {
		b.udp.Close()
	}
	if b.tcp != nil {
		b.tcp.Close()
	}
}

// freePortTries bounds the search for a port free on both UDP and TCP when
// the caller asked for any port.
const freePortTries = 16

// bindPorts binds UDP and TCP on host:port before anything else starts, so a
// port another process holds is reported as WT_PORT_IN_USE with the port and
// the remedy (§10.3) instead of surfacing later, or never: a QUIC binding
// reports nothing on some stacks. A start refused part-way releases what it
// bound. Port 0 picks a port free on both protocols.
func bindPorts(host string, port int) (boundPorts, error) {
	if port != 0 {
		return bindBoth(host, port)
	}
	var err error
	for range freePortTries {
		udp, uerr := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(host)})
		if uerr != nil {
			return boundPorts{}, fmt.Errorf("webtransport: binding UDP on %s: %w", host, uerr)
		}
		p := udp.LocalAddr().(*net.UDPAddr).Port
		tcp, terr := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if terr == nil {
			return boundPorts{udp: udp, tcp: tcp}, nil
		}
		udp.Close()
		err = terr
	}
	return boundPorts{}, fmt.Errorf("webtransport: no port on %s free on both UDP and TCP after %d tries: %w", host, freePortTries, err)
}

func bindBoth(host string, port int) (boundPorts, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	udpAddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return boundPorts{}, fmt.Errorf("webtransport: address %s: %w", addr, err)
	}
	udp, err := net.ListenUDP("udp", udpAddr)
	if err != nil {
		return boundPorts{}, bindError("UDP", addr, err)
	}
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		udp.Close()
		return boundPorts{}, bindError("TCP", addr, err)
	}
	return boundPorts{udp: udp, tcp: tcp}, nil
}

func bindError(proto, addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return wire.Errorf(wire.PortInUse, "%s port %s is held by another process: %w", proto, addr, err)
	}
	return fmt.Errorf("webtransport: binding %s %s: %w", proto, addr, err)
}
