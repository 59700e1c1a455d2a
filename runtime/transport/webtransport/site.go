package webtransport

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/transport-io/tiogen/runtime/devcert"
)

const (
	// WellKnownPath answers HEAD over HTTPS so a client whose QUIC
	// handshake failed can tell a blocked UDP path from a dead server
	// (§10.3 WT_UDP_UNREACHABLE).
	WellKnownPath = "/.well-known/transport-io"
	// DevManifestPath serves a development server's certificate pin
	// (devcert.Manifest), on loopback only.
	DevManifestPath = devcert.ManifestPath
)

// site is the HTTPS (TCP) side of a listener: the well-known answers, the
// Alt-Svc advertisement of HTTP/3, the refusal of WebTransport over HTTP/2,
// and the application's handler (the WebSocket mapping) for every other path.
type site struct {
	altSvc   string
	manifest http.Handler // non-nil only for a development listener on loopback
	next     http.Handler // nil: 404
}

func newSite(udpPort int, dev *devcert.Cert, url string, next http.Handler) *site {
	s := &site{altSvc: `h3=":` + strconv.Itoa(udpPort) + `"; ma=86400`, next: next}
	if dev != nil {
		s.manifest = dev.ManifestHandler(url)
	}
	return s
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Alt-Svc", s.altSvc)
	switch {
	case r.Method == http.MethodConnect && strings.EqualFold(r.Header.Get(":protocol"), "webtransport"):
		// §2: WebTransport over HTTP/2 would make the unreliable lane
		// reliable; never offer or accept it. (Go's HTTP/2 server keeps
		// extended CONNECT off unless GODEBUG enables it; this holds
		// either way.)
		http.Error(w, "WebTransport over HTTP/2 is refused: use HTTP/3 (transport-io §2)", http.StatusNotImplemented)
	case r.URL.Path == WellKnownPath:
		if r.Method != http.MethodHead && r.Method != http.MethodGet {
			w.Header().Set("Allow", "HEAD, GET")
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
	case r.URL.Path == DevManifestPath && s.manifest != nil:
		s.manifest.ServeHTTP(w, r)
	case s.next != nil:
		s.next.ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}
