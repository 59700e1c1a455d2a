package golang

import (
	"strings"
	"testing"

	"github.com/transport-io/tiogen/dsl/check"
)

func TestPackageName(t *testing.T) {
	for in, want := range map[string]string{
		"chat": "chat", "chat_app": "chatapp", "ChatApp": "chatapp",
		"func": "func_", "type": "type_", "string": "string_", "len": "len_", "any": "any_",
	} {
		if got := packageName(in); got != want {
			t.Errorf("packageName(%q) = %q, want %q", in, got, want)
		}
	}
	for name, ok := range map[string]bool{"chat": true, "func": false, "int": false, "a-b": false, "_": false, "": false} {
		if (ValidPackageName(name) == "") != ok {
			t.Errorf("ValidPackageName(%q) = %q", name, ValidPackageName(name))
		}
	}
}

// TestClashesAreReportedNeverRenamed: a contract name whose Go name the file
// already declares is reported at its position, naming what holds it, and
// Generate refuses the contract.
func TestClashesAreReportedNeverRenamed(t *testing.T) {
	cases := []struct {
		src  string
		want string
	}{
		{"contract c\ntype Room { a: string }\nevent e reliable Room\n",
			"t.tio:2:6: type 'Room' becomes Room in Go, which is the generated room handle"},
		{"contract c\ntype Peer { a: string }\nevent e reliable Peer\n",
			"t.tio:2:6: type 'Peer' becomes Peer in Go, which is the generated server's side of a session"},
		{"contract c\nevent close reliable string returns string\n",
			"t.tio:2:7: event 'close' becomes Client.Close in Go, which is a method of the generated Client"},
		{"contract c\ntype LevelInfo { a: string }\nenum Level { info warn }\nevent e reliable LevelInfo returns Level\n",
			"t.tio:3:14: value 'info' of enum 'Level' becomes LevelInfo in Go, as type 'LevelInfo' at t.tio:2:6 does"},
		{"contract c\ntype Form { validate: bool }\nevent e reliable Form\n",
			"t.tio:2:13: field 'validate' of type 'Form' becomes Form.Validate in Go, which is a method of every generated type"},
		{"contract c\nevent chat from client reliable string\nevent emit_chat reliable string returns string\n",
			"t.tio:3:7: event 'emit_chat' becomes Client.EmitChat in Go, as event 'chat' (its emitter) at t.tio:2:7 does"},
		{"contract c\nevent runtime reliable string yields string\n",
			"t.tio:2:7: event 'runtime' becomes Client.Runtime in Go, which is the generated Client's way to its runtime value"},
		{"contract c\nevent client_base reliable string returns string\n",
			"t.tio:2:7: event 'client_base' becomes Client.ClientBase in Go, which is the generated Client's embedded typed.ClientBase"},
	}
	for _, c := range cases {
		ct, diags := check.Source("t.tio", []byte(c.src))
		if len(diags) > 0 {
			t.Fatalf("%q: %v", c.src, diags)
		}
		clashes := check.Format(Check(ct))
		if !strings.HasPrefix(clashes, c.want) || strings.Count(clashes, "\nt.tio:") != 0 {
			t.Errorf("%q:\n%s\nwant one clash starting %q", c.src, clashes, c.want)
		}
		if !strings.Contains(clashes, "\n    rename ") {
			t.Errorf("%q: the hint does not say what to rename:\n%s", c.src, clashes)
		}
		if _, err := Generate(ct, Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: Generate = %v, want it refused with the clash", c.src, err)
		}
	}
}

func TestGroupImportsAsGoimports(t *testing.T) {
	src := "package p\n\nimport (\n\t\"context\"\n\t\"example.com/x/y\"\n\t\"iter\"\n\tz \"github.com/a/b\"\n)\n\nvar _ = 1\n"
	want := "package p\n\nimport (\n\t\"context\"\n\t\"iter\"\n\n\t\"example.com/x/y\"\n\tz \"github.com/a/b\"\n)\n\nvar _ = 1\n"
	if got := string(groupImports([]byte(src))); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for _, one := range []string{"package p\n\nimport \"context\"\n", "package p\n"} {
		if got := string(groupImports([]byte(one))); got != one {
			t.Errorf("changed %q to %q", one, got)
		}
	}
}
