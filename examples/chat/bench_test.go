package chat_test

import (
	"encoding/json"
	"testing"

	"github.com/transport-io/tiogen/examples/chat"
)

// stdMessage is chat.Message as encoding/json would carry it: the
// reflection-based alternative to the generated codec. It checks nothing
// (required fields, enum values) that the generated decoder checks.
type stdMessage struct {
	Room    string            `json:"room"`
	Body    string            `json:"body"`
	SentAt  *int64            `json:"sentAt,omitempty,string"`
	Tags    []string          `json:"tags"`
	Meta    map[string]string `json:"meta"`
	Mood    string            `json:"mood"`
	ReplyTo *stdMessage       `json:"replyTo,omitempty"`
}

func representative() chat.Message {
	sent := int64(1764460800123)
	return chat.Message{
		Room: "lobby", Body: "Did you see the release notes? The new cursor lane is much smoother.",
		SentAt: &sent, Tags: []string{"release", "cursor"}, Meta: map[string]string{"from": "ann", "client": "web"},
		Mood:    chat.MoodHappy,
		ReplyTo: &chat.Message{Room: "lobby", Body: "Shipping today", Tags: []string{}, Meta: map[string]string{}, Mood: chat.MoodSad},
	}
}

// BenchmarkMessageJSON compares the generated codec with encoding/json on
// the chat example's Message (docs/performance.md records the decision).
func BenchmarkMessageJSON(b *testing.B) {
	m := representative()
	wireBytes, err := m.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	var std stdMessage
	if err := json.Unmarshal(wireBytes, &std); err != nil {
		b.Fatal(err)
	}
	b.Run("encode/generated", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/generated-send-path", func(b *testing.B) {
		// Validate encodes into a pooled buffer, as Emit, Call and
		// SendDatagram do before the engine copies the payload.
		b.ReportAllocs()
		for b.Loop() {
			if err := m.Validate(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(&std); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/generated", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v chat.Message
			if err := v.UnmarshalJSON(wireBytes); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v stdMessage
			if err := json.Unmarshal(wireBytes, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
