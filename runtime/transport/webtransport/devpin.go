package webtransport

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/wire"
)

// maxManifest bounds the development manifest a client reads.
const maxManifest = 4 << 10

// DevPin fetches the pin of a development server's certificate from the
// manifest it serves at DevManifestPath, so a local client needs no
// copy-pasted hash (a browser page does the same). sessionURL is the
// session's https:// or wss:// URL; only its host is used, never its query.
// Its host must be loopback (an IP literal or "localhost"): anywhere else
// is WT_DEV_ONLY, since the manifest is fetched without verification and
// trusted only because nothing but this machine can answer there. The
// certificate that serves the manifest must be the one it names, valid at
// clk's now (WT_CERT_EXPIRED) and for at most 14 days, as a pinned
// certificate must be. A server with a real certificate serves no manifest:
// WT_HANDSHAKE_FAILED says so.
func DevPin(ctx context.Context, sessionURL string, clk clock.Clock) ([32]byte, error) {
	var pin [32]byte
	u, err := url.Parse(sessionURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "wss") || u.Host == "" {
		return pin, wire.Errorf(wire.HandshakeFailed, "a development pin needs an https:// or wss:// session URL")
	}
	if !loopbackHost(u.Hostname()) {
		return pin, wire.Errorf(wire.DevOnly, "the development certificate is fetched from loopback only, not from %s", u.Hostname())
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultDialTimeout)
	defer cancel()
	tr := &http.Transport{
		// Verified below, against the manifest's own pin.
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
		ForceAttemptHTTP2: true,
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+DevManifestPath, nil)
	if err != nil {
		return pin, wire.Errorf(wire.HandshakeFailed, "development manifest of %s: %v", host, err)
	}
	rsp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return pin, &wire.Error{
			Code:    wire.HandshakeFailed,
			Message: fmt.Sprintf("%s does not answer over HTTPS for its development manifest (%v)", host, err),
			Remedy:  "Start the development server, and check the URL's host and port.",
			Err:     err,
		}
	}
	defer rsp.Body.Close()
	switch rsp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return pin, &wire.Error{
			Code:    wire.HandshakeFailed,
			Message: fmt.Sprintf("%s serves no development manifest at %s: it runs with a real certificate, or is no transport-io server", host, DevManifestPath),
			Remedy:  "Verify the server against its certificate authority (no development pin), or start it with a development certificate.",
		}
	case http.StatusForbidden:
		return pin, wire.Errorf(wire.DevOnly, "%s refused its development manifest to this client (HTTP 403)", host)
	default:
		return pin, wire.Errorf(wire.HandshakeFailed, "%s answered its development manifest with HTTP %d", host, rsp.StatusCode)
	}
	var m devcert.Manifest
	if err := json.NewDecoder(io.LimitReader(rsp.Body, maxManifest)).Decode(&m); err != nil || len(m.SHA256) != len(pin) {
		return pin, wire.Errorf(wire.HandshakeFailed, "the development manifest of %s is not a manifest (a 32-byte sha256)", host)
	}
	for i, v := range m.SHA256 {
		if v < 0 || v > 255 {
			return pin, wire.Errorf(wire.HandshakeFailed, "the development manifest of %s is not a manifest (a 32-byte sha256)", host)
		}
		pin[i] = byte(v)
	}
	if rsp.TLS == nil || len(rsp.TLS.PeerCertificates) == 0 {
		return pin, wire.Errorf(wire.HandshakeFailed, "%s served its development manifest without a certificate", host)
	}
	var refused pinRefusal
	err = checkPinned([][32]byte{pin}, clock.Or(clk), &refused, rsp.TLS.PeerCertificates[0])
	switch {
	case refused.expired.Load():
		return pin, wire.Errorf(wire.CertExpired, "the development certificate of %s has expired: %w", host, err)
	case err != nil:
		return pin, wire.Errorf(wire.HandshakeFailed, "the development manifest of %s does not match the certificate it is served with: %w", host, err)
	}
	return pin, nil
}

// loopbackHost reports whether host names this machine: a loopback IP
// literal, or localhost.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
