// Package devcert mints and keeps the development certificate that lets a
// browser reach a local WebTransport server without a certificate authority:
// the page pins the certificate by its SHA-256 (serverCertificateHashes), which
// Chromium accepts only for ECDSA P-256 certificates valid at most 14 days.
package devcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
)

const (
	// MaxValidity is the longest validity a browser accepts for a
	// certificate pinned by hash.
	MaxValidity = 14 * 24 * time.Hour
	// DefaultValidity leaves room under MaxValidity.
	DefaultValidity = 10 * 24 * time.Hour
	// RenewWithin is how close to expiry a kept certificate is replaced.
	RenewWithin = 24 * time.Hour
	// backdate covers a small clock skew between the minting machine and the
	// browser; it counts inside the validity, so the total stays capped.
	backdate = 5 * time.Minute

	certFile = "cert.pem"
	keyFile  = "key.pem"
)

// Hosts are the loopback names the certificate covers.
var Hosts = []string{"127.0.0.1", "::1", "localhost"}

// Cert is a development certificate and its pin.
type Cert struct {
	// TLS is the certificate and key, ready for a tls.Config.
	TLS tls.Certificate
	// Leaf is the parsed certificate.
	Leaf *x509.Certificate
	// SHA256 is the digest of the DER certificate: the value a client pins.
	SHA256 [32]byte
}

// Options tell Ensure where to keep the certificate and how long it lives.
type Options struct {
	// Dir keeps cert.pem and key.pem. Default: DefaultDir().
	Dir string
	// Validity of a new certificate; default DefaultValidity, at most
	// MaxValidity.
	Validity time.Duration
	// Clock decides expiry; default the wall clock.
	Clock clock.Clock
}

// DefaultDir is <user cache dir>/tiogen/devcert.
func DefaultDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("devcert: no user cache directory (%w); pass Options.Dir", err)
	}
	return filepath.Join(base, "tiogen", "devcert"), nil
}

// Ensure returns the certificate kept in the directory, minting and storing a
// new one when there is none, it is unreadable, it does not fit the browser's
// rules, or less than RenewWithin of its validity remains.
func Ensure(opts Options) (*Cert, error) {
	dir := opts.Dir
	if dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	now := clock.Or(opts.Clock).Now()
	if c, err := Load(dir); err == nil && c.usable(now) {
		return c, nil
	}
	c, err := Mint(now, opts.Validity)
	if err != nil {
		return nil, err
	}
	if err := c.save(dir); err != nil {
		return nil, err
	}
	return c, nil
}

// usable reports whether a kept certificate can still be served: the
// browser's algorithm and validity rules, the loopback names, and more than
// RenewWithin left.
func (c *Cert) usable(now time.Time) bool {
	pub, ok := c.Leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return false
	}
	if c.Leaf.NotAfter.Sub(c.Leaf.NotBefore) > MaxValidity || now.Before(c.Leaf.NotBefore) {
		return false
	}
	for _, h := range Hosts {
		if c.Leaf.VerifyHostname(h) != nil {
			return false
		}
	}
	return c.Leaf.NotAfter.Sub(now) > RenewWithin
}

// Mint creates a certificate for the loopback names, valid from now for the
// given validity (DefaultValidity when 0). A validity over MaxValidity is an
// error: browsers refuse such a certificate when pinned by hash.
func Mint(now time.Time, validity time.Duration) (*Cert, error) {
	if validity == 0 {
		validity = DefaultValidity
	}
	if validity <= backdate || validity > MaxValidity {
		return nil, fmt.Errorf("devcert: validity %v is outside (%v, %v]: browsers refuse a pinned certificate valid longer than 14 days", validity, backdate, MaxValidity)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("devcert: generating key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("devcert: generating serial: %w", err)
	}
	notBefore := now.Add(-backdate)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "tiogen development certificate"},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("devcert: creating certificate: %w", err)
	}
	return fromDER(der, key)
}

func fromDER(der []byte, key *ecdsa.PrivateKey) (*Cert, error) {
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("devcert: parsing certificate: %w", err)
	}
	return &Cert{
		TLS:    tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		Leaf:   leaf,
		SHA256: sha256.Sum256(der),
	}, nil
}

// Load reads cert.pem and key.pem from dir.
func Load(dir string) (*Cert, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, certFile))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, keyFile))
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New("devcert: kept files are not PEM")
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("devcert: parsing key: %w", err)
	}
	c, err := fromDER(cb.Bytes, key)
	if err != nil {
		return nil, err
	}
	if pub, ok := c.Leaf.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, errors.New("devcert: kept key does not match the kept certificate")
	}
	return c, nil
}

// save writes the pair through temporary files and renames, so a process
// reading the directory concurrently never sees a half-written pair.
func (c *Cert) save(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("devcert: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(c.TLS.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		return fmt.Errorf("devcert: encoding key: %w", err)
	}
	if err := writeAtomic(dir, keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})); err != nil {
		return err
	}
	return writeAtomic(dir, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.TLS.Certificate[0]}))
}

func writeAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, name+".tmp*")
	if err != nil {
		return fmt.Errorf("devcert: %w", err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("devcert: writing %s: %w", name, err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("devcert: %w", err)
	}
	return nil
}

// NotAfter is when the certificate expires.
func (c *Cert) NotAfter() time.Time { return c.Leaf.NotAfter }

// Hex is the pin as lowercase hex.
func (c *Cert) Hex() string { return hex.EncodeToString(c.SHA256[:]) }

// Base64 is the pin in standard base64.
func (c *Cert) Base64() string { return base64.StdEncoding.EncodeToString(c.SHA256[:]) }

// JSHashes is a ready serverCertificateHashes option for a page's
// new WebTransport(url, {serverCertificateHashes: ...}).
func (c *Cert) JSHashes() string {
	var b strings.Builder
	b.WriteString(`serverCertificateHashes: [{algorithm: "sha-256", value: new Uint8Array([`)
	for i, v := range c.SHA256 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(int(v)))
	}
	b.WriteString(`])}]`)
	return b.String()
}

// Manifest is the body of /.well-known/transport-io-dev: the pin as an array
// of bytes a page can hand to serverCertificateHashes, the session URL and
// the expiry.
type Manifest struct {
	SHA256    []int     `json:"sha256"`
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Manifest returns the JSON manifest for a server reachable at url.
func (c *Cert) Manifest(url string) []byte {
	m := Manifest{SHA256: make([]int, len(c.SHA256)), URL: url, ExpiresAt: c.Leaf.NotAfter.UTC()}
	for i, v := range c.SHA256 {
		m.SHA256[i] = int(v)
	}
	b, _ := json.Marshal(m) // ints, a string and a time: cannot fail
	return b
}
