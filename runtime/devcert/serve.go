package devcert

import (
	"net"
	"net/http"

	"github.com/transport-io/tiogen/runtime/wire"
)

// ManifestPath is where a development server serves its Manifest.
const ManifestPath = "/.well-known/transport-io-dev"

// ManifestHandler serves the certificate's Manifest, naming the session URL
// url, to loopback peers only (403 WT_DEV_ONLY to others). Mount it at
// ManifestPath: on the listener's HTTPS side, where Go clients read it, and
// on the plain-HTTP server of a development page, which a browser can read
// (it trusts the development certificate for WebTransport only, by its
// pinned hash, never for fetch over HTTPS).
func (c *Cert) ManifestHandler(url string) http.Handler {
	body := c.Manifest(url)
	return LoopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		// The pin is public; a local page on another port may read it.
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Write(body)
	}))
}

// LoopbackOnly passes requests from loopback peers to h and answers every
// other peer 403 WT_DEV_ONLY: what a development affordance (the manifest,
// a plain ws:// mapping) is served behind.
func LoopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !LoopbackPeer(r.RemoteAddr) {
			http.Error(w, wire.Errorf(wire.DevOnly, "%s is served to loopback peers only", r.URL.Path).Error(), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// LoopbackPeer reports whether a request's RemoteAddr (host:port) is on
// this machine.
func LoopbackPeer(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
