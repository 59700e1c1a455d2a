package devcert_test

import (
	"fmt"
	"os"
	"time"

	"github.com/transport-io/tiogen/runtime/devcert"
)

// A server keeps its development certificate in a folder and reuses it
// until it nears expiry; a client pins its SHA-256 instead of trusting a
// certificate authority. Browsers accept a pinned certificate
// (serverCertificateHashes) only while it is valid for at most 14 days,
// which is why Ensure mints short-lived ones and renews them.
func ExampleEnsure() {
	dir, err := os.MkdirTemp("", "devcert-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	first, err := devcert.Ensure(devcert.Options{Dir: dir})
	if err != nil {
		panic(err)
	}
	again, err := devcert.Ensure(devcert.Options{Dir: dir})
	if err != nil {
		panic(err)
	}
	fmt.Println("reused:", first.SHA256 == again.SHA256)
	fmt.Println("valid for at most 14 days:", first.Leaf.NotAfter.Sub(first.Leaf.NotBefore) <= 14*24*time.Hour)
	fmt.Println("covers:", first.Leaf.IPAddresses, first.Leaf.DNSNames)
	// Output:
	// reused: true
	// valid for at most 14 days: true
	// covers: [127.0.0.1 ::1] [localhost]
}
