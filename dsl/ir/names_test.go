package ir

import (
	"slices"
	"testing"
)

func TestIdentifierConversion(t *testing.T) {
	cases := []struct {
		name   string
		words  []string
		goName string
		tsName string
	}{
		{"chat", []string{"chat"}, "Chat", "chat"},
		{"user_name", []string{"user", "name"}, "UserName", "userName"},
		{"userName", []string{"user", "Name"}, "UserName", "userName"},
		{"UserName", []string{"User", "Name"}, "UserName", "userName"},
		{"userID", []string{"user", "ID"}, "UserID", "userID"},
		{"user_id", []string{"user", "id"}, "UserId", "userId"},
		{"HTTPServer", []string{"HTTP", "Server"}, "HTTPServer", "httpServer"},
		{"httpServer", []string{"http", "Server"}, "HttpServer", "httpServer"},
		{"URL", []string{"URL"}, "URL", "url"},
		{"e10732", []string{"e10732"}, "E10732", "e10732"},
		{"v2Name", []string{"v2", "Name"}, "V2Name", "v2Name"},
		{"__private__x", []string{"private", "x"}, "PrivateX", "privateX"},
		{"sentAt", []string{"sent", "At"}, "SentAt", "sentAt"},
		{"_", nil, "", ""},
	}
	for _, c := range cases {
		if got := Words(c.name); !slices.Equal(got, c.words) {
			t.Errorf("Words(%q) = %q, want %q", c.name, got, c.words)
		}
		if got := GoName(c.name); got != c.goName {
			t.Errorf("GoName(%q) = %q, want %q", c.name, got, c.goName)
		}
		if got := TSName(c.name); got != c.tsName {
			t.Errorf("TSName(%q) = %q, want %q", c.name, got, c.tsName)
		}
	}
}
