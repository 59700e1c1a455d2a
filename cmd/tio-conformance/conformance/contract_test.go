package conformance

import (
	"bytes"
	"os"
	"testing"

	"github.com/transport-io/tiogen/dsl/check"
	"github.com/transport-io/tiogen/gen/golang"
)

// The committed conformance.tio.go is what its go:generate line writes from
// testdata/conformance/conformance.tio, byte for byte: the served contract
// (ids, lanes, kinds, directions, codecs, fallbacks; §4.3, §5.3, §5.4,
// §7.6) is the file's.
func TestGeneratedIsCurrent(t *testing.T) {
	// The path as go:generate passes it from this folder, so the source
	// line matches.
	const tioFile = "../../../testdata/conformance/conformance.tio"
	src, err := os.ReadFile(tioFile)
	if err != nil {
		t.Fatal(err)
	}
	c, diags := check.Source(tioFile, src)
	if len(diags) > 0 {
		t.Fatalf("%s: %s", tioFile, check.Format(diags))
	}
	want, err := golang.Generate(c, golang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(golang.FileName(c))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("conformance.tio.go is stale: run go generate ./cmd/tio-conformance/conformance")
	}
}
