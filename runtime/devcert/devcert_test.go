package devcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
)

func TestMintIsP256ForLoopbackWithinFourteenDays(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c, err := Mint(now, 0)
	if err != nil {
		t.Fatal(err)
	}
	pub, ok := c.Leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Fatalf("key is %T, want ECDSA P-256", c.Leaf.PublicKey)
	}
	if got := c.Leaf.NotAfter.Sub(c.Leaf.NotBefore); got != DefaultValidity {
		t.Fatalf("validity %v, want %v", got, DefaultValidity)
	}
	if c.Leaf.NotBefore.After(now) {
		t.Fatalf("not valid at mint time: NotBefore %v", c.Leaf.NotBefore)
	}
	for _, h := range []string{"127.0.0.1", "::1", "localhost"} {
		if err := c.Leaf.VerifyHostname(h); err != nil {
			t.Errorf("does not cover %s: %v", h, err)
		}
	}
	if err := c.Leaf.VerifyHostname("example.com"); err == nil {
		t.Error("covers example.com")
	}
	if c.SHA256 != sha256.Sum256(c.TLS.Certificate[0]) {
		t.Error("SHA256 is not the digest of the DER certificate")
	}
}

func TestMintRefusesMoreThanFourteenDays(t *testing.T) {
	now := time.Now()
	if _, err := Mint(now, MaxValidity); err != nil {
		t.Fatalf("14 days refused: %v", err)
	}
	_, err := Mint(now, MaxValidity+time.Second)
	if err == nil || !strings.Contains(err.Error(), "14 days") {
		t.Fatalf("14 days + 1 s: err = %v, want a refusal naming 14 days", err)
	}
}

func TestEnsureKeepsThenRenewsUnder24Hours(t *testing.T) {
	dir := t.TempDir()
	fake := clock.NewFake()
	first, err := Ensure(Options{Dir: dir, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{certFile, keyFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("%s not kept: %v", name, err)
		}
	}
	st, _ := os.Stat(filepath.Join(dir, keyFile))
	if st.Mode().Perm()&0o077 != 0 {
		t.Errorf("key file mode %v is readable by others", st.Mode().Perm())
	}

	// With more than 24 h left the kept certificate is reused.
	fake.Advance(DefaultValidity - RenewWithin - time.Hour)
	again, err := Ensure(Options{Dir: dir, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	if again.SHA256 != first.SHA256 {
		t.Fatal("renewed although more than 24 h remained")
	}

	// Under 24 h left it is replaced, and the new one is kept.
	fake.Advance(2 * time.Hour)
	renewed, err := Ensure(Options{Dir: dir, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	if renewed.SHA256 == first.SHA256 {
		t.Fatal("not renewed with under 24 h left")
	}
	if renewed.NotAfter().Sub(fake.Now()) < DefaultValidity-time.Hour {
		t.Fatalf("renewed certificate expires %v, only %v from now", renewed.NotAfter(), renewed.NotAfter().Sub(fake.Now()))
	}
	kept, err := Load(dir)
	if err != nil || kept.SHA256 != renewed.SHA256 {
		t.Fatalf("renewed certificate not kept: %v", err)
	}
}

func TestEnsureReplacesAnUnusableKeptCertificate(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, certFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Ensure(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := Load(dir)
	if err != nil || kept.SHA256 != c.SHA256 {
		t.Fatalf("garbage not replaced: %v", err)
	}
}

func TestPinRenderings(t *testing.T) {
	c, err := Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Hex() != hex.EncodeToString(c.SHA256[:]) || len(c.Hex()) != 64 {
		t.Errorf("Hex = %q", c.Hex())
	}
	if b, err := base64.StdEncoding.DecodeString(c.Base64()); err != nil || string(b) != string(c.SHA256[:]) {
		t.Errorf("Base64 = %q does not decode to the digest", c.Base64())
	}
	js := c.JSHashes()
	if !strings.HasPrefix(js, `serverCertificateHashes: [{algorithm: "sha-256", value: new Uint8Array([`) || strings.Count(js, ",") != 1+31 {
		t.Errorf("JSHashes = %s", js)
	}

	var m Manifest
	if err := json.Unmarshal(c.Manifest("https://127.0.0.1:4433/x"), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.SHA256) != 32 || m.SHA256[0] != int(c.SHA256[0]) || m.SHA256[31] != int(c.SHA256[31]) {
		t.Errorf("manifest sha256 = %v", m.SHA256)
	}
	if m.URL != "https://127.0.0.1:4433/x" || !m.ExpiresAt.Equal(c.NotAfter()) {
		t.Errorf("manifest = %+v", m)
	}
}

// §10.3 WT_DEV_ONLY: the manifest is served to loopback peers only, with
// the pin and the session URL it was made for.
func TestSpec10_3_ManifestHandlerServesLoopbackOnly(t *testing.T) {
	c, err := Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	h := c.ManifestHandler("https://127.0.0.1:4433/chat")
	for _, peer := range []string{"127.0.0.1:5000", "[::1]:5000"} {
		r := httptest.NewRequest(http.MethodGet, ManifestPath, nil)
		r.RemoteAddr = peer
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var m Manifest
		if err := json.Unmarshal(w.Body.Bytes(), &m); w.Code != http.StatusOK || err != nil || m.URL != "https://127.0.0.1:4433/chat" || m.SHA256[0] != int(c.SHA256[0]) {
			t.Errorf("from %s: %d %s %v", peer, w.Code, w.Body.String(), err)
		}
		if got := w.Header().Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type %q", got)
		}
	}
	for _, peer := range []string{"192.0.2.7:5000", "[2001:db8::1]:5000", "garbage"} {
		r := httptest.NewRequest(http.MethodGet, ManifestPath, nil)
		r.RemoteAddr = peer
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "WT_DEV_ONLY") {
			t.Errorf("from %s: %d %q, want 403 WT_DEV_ONLY", peer, w.Code, w.Body.String())
		}
	}
}
