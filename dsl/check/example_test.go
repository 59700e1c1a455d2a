package check_test

import (
	"fmt"

	"github.com/transport-io/tiogen/dsl/check"
)

// Source parses and checks a contract in one step: either the IR the
// generators read, or diagnostics that say where the contract is wrong
// and what to do, as `tiogen check` prints them.
func ExampleSource() {
	good := []byte(`contract chat
type Message { room: string  body: string }
event chat from client reliable Message
event save reliable Message returns Message
`)
	c, diags := check.Source("chat.tio", good)
	fmt.Println(len(diags), c.Name, len(c.Events))

	bad := []byte(`contract chat
type Message { body: string }
event chat from client reliable Mesage
`)
	_, diags = check.Source("bad.tio", bad)
	fmt.Print(check.Format(diags))
	// Output:
	// 0 chat 2
	// bad.tio:3:33: unknown type 'Mesage'
	//     did you mean 'Message'? Otherwise declare it (type Mesage { ... } or enum Mesage { ... }) or use a built-in type: bool, string, int32, int64, uint32, uint64, float64, bytes, json
}
