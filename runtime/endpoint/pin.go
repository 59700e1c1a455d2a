package endpoint

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/transport-io/tiogen/runtime/clock"
)

// pinnedTLS verifies a wss:// server as WebTransport's pin does: the leaf
// certificate's SHA-256 is one of pins and it is valid now. The chain and
// name are not checked: the pin replaces them, as for a browser's
// serverCertificateHashes.
func pinnedTLS(pins [][32]byte, clk clock.Clock) *tls.Config {
	clk = clock.Or(clk)
	return &tls.Config{
		InsecureSkipVerify: true, // replaced by the pin check below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("endpoint: the server sent no certificate")
			}
			sum := sha256.Sum256(raw[0])
			for _, p := range pins {
				if p != sum {
					continue
				}
				leaf, err := x509.ParseCertificate(raw[0])
				if err != nil {
					return fmt.Errorf("endpoint: pinned certificate: %w", err)
				}
				if now := clk.Now(); now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
					return fmt.Errorf("endpoint: pinned certificate is valid only from %v to %v", leaf.NotBefore.UTC(), leaf.NotAfter.UTC())
				}
				return nil
			}
			return fmt.Errorf("endpoint: certificate SHA-256 %x matches no pinned hash", sum)
		},
	}
}
