package typescript

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
)

// TestSpec4_3_TableIsTheIRs: the generated contract table lists every event
// of the IR, in the handshake's order, with its name, id, lane, direction,
// shape, codecs and fallback, so the TypeScript client sends the table the
// Go server expects (§4.3, §5.3, §5.4).
func TestSpec4_3_TableIsTheIRs(t *testing.T) {
	t.Chdir("../..")
	entry := regexp.MustCompile(`(?m)^    \{ name: '([^']+)', id: 0x([0-9a-f]{8}), lane: '(\w+)',(?: from: '(\w+)',)? shape: '(\w+)', payload: '(\w+)'(?:, result: '(\w+)')?(?:, fallback: '(\w+)')?[, ]`)
	for dir, c := range goldenCases(t) {
		src, err := Generate(c)
		if err != nil {
			t.Fatal(err)
		}
		got := entry.FindAllStringSubmatch(string(src), -1)
		if len(got) != len(c.Events) {
			t.Errorf("%s: %d table entries, want %d", dir, len(got), len(c.Events))
			continue
		}
		for i, e := range c.Events {
			from := ""
			if e.Kind == "emit" && e.Direction != "either" {
				from = string(e.Direction)
			}
			result := ""
			if e.Result != nil {
				result = string(e.Result.Codec)
			}
			want := []string{e.WireName, fmt.Sprintf("%08x", e.ID), string(e.Lane), from, string(e.Kind), string(e.Payload.Codec), result, string(e.Fallback)}
			for j, w := range want {
				if got[i][j+1] != w {
					t.Errorf("%s: event %d (%s) field %d is %q, want %q", dir, i, e.Name, j, got[i][j+1], w)
				}
			}
			if id, _ := strconv.ParseUint(got[i][2], 16, 32); uint32(id) != c.Table()[i].ID {
				t.Errorf("%s: %s id differs from the handshake table's", dir, e.Name)
			}
		}
	}
}
