package golang

import (
	"reflect"
	"slices"
	"testing"

	"github.com/transport-io/tiogen/runtime/typed"
)

// TestWrapperNamesAreTheBasesMethods: the names the generator reserves on
// each generated type are the method set of the base it embeds (the
// generator lists them rather than reading the runtime's types), so a
// method added to a base cannot be shadowed by a contract name unnoticed.
func TestWrapperNamesAreTheBasesMethods(t *testing.T) {
	for _, c := range []struct {
		w    wrapper
		base any
	}{
		{clientWrapper, typed.ClientBase{}},
		{peerWrapper, typed.PeerBase{}},
		{roomWrapper, typed.RoomBase{}},
		{serverWrapper, typed.ServerBase{}},
	} {
		typ := reflect.TypeOf(c.base)
		if typ.Name() != c.w.base {
			t.Errorf("%s embeds typed.%s, the test checks %s", c.w.name, c.w.base, typ.Name())
		}
		var got []string
		for i := range typ.NumMethod() {
			got = append(got, typ.Method(i).Name)
		}
		want := append([]string{"Runtime"}, c.w.methods...)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("typed.%s has methods %v; the generator reserves %v", c.w.base, got, want)
		}
	}
}
