package golang

import "testing"

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

func TestScopeEscapesInOrder(t *testing.T) {
	s := newScope(fixedAPI...)
	for in, want := range map[string]string{"Client": "Client_", "Message": "Message"} {
		if got := s.take(in); got != want {
			t.Errorf("take(%q) = %q, want %q", in, got, want)
		}
	}
	if got := s.take("Client_"); got != "Client__" {
		t.Errorf("a name equal to an escaped one: %q", got)
	}
	// Methods the embedded runtime types have are taken first.
	if got := newScope(clientNames...).take("Close"); got != "Close_" {
		t.Errorf("Client.Close: %q", got)
	}
}
