package xlang

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/dsl/check"
	"github.com/transport-io/tiogen/runtime/wire"
	"github.com/transport-io/tiogen/testdata/golden/chat/go"
	"github.com/transport-io/tiogen/testdata/golden/docs/go"
	"github.com/transport-io/tiogen/testdata/golden/gen-keywords/go"
	"github.com/transport-io/tiogen/testdata/golden/gen-xlang/go"
	"github.com/transport-io/tiogen/testdata/golden/types/go"
)

// fixtures is the format of fixtures.json.
type fixtures struct {
	Contract string `json:"contract"`
	Types    map[string]struct {
		Valid []struct {
			Name      string `json:"name"`
			Input     string `json:"input"`
			Canonical string `json:"canonical"`
		} `json:"valid"`
		Invalid []struct {
			Name  string `json:"name"`
			Input string `json:"input"`
			Path  string `json:"path"`
			Rule  string `json:"rule"`
		} `json:"invalid"`
	} `json:"types"`
}

// codec decodes a payload with a type's generated decoder and re-encodes
// the value with its generated encoder: the UnmarshalJSON and MarshalJSON
// methods tiogen writes, which run the same code as a received and a sent
// message (typed.Unmarshal, typed.Marshal).
type codec func(payload []byte) ([]byte, error)

func record[T json.Marshaler, P interface {
	*T
	json.Unmarshaler
}]() codec {
	return func(payload []byte) ([]byte, error) {
		var v T
		if err := P(&v).UnmarshalJSON(payload); err != nil {
			return nil, err
		}
		return v.MarshalJSON()
	}
}

// generated holds, per golden case (and the conformance contract), the
// generated code of each record.
var generated = map[string]map[string]codec{
	"conformance": {
		"Text":     record[conformance.Text](),
		"Count":    record[conformance.Count](),
		"Item":     record[conformance.Item](),
		"Point":    record[conformance.Point](),
		"RoomName": record[conformance.RoomName](),
		"Stats":    record[conformance.Stats](),
	},
	"chat": {
		"Message":        record[chat.Message](),
		"Cursor":         record[chat.Cursor](),
		"SaveRequest":    record[chat.SaveRequest](),
		"SaveResult":     record[chat.SaveResult](),
		"HistoryRequest": record[chat.HistoryRequest](),
	},
	"docs":         {"Point": record[docs.Point]()},
	"gen-keywords": {"Words": record[func_.Words]()},
	"gen-xlang": {
		"Edge": record[xlang.Edge](),
		"Leaf": record[xlang.Leaf](),
		"Node": record[xlang.Node](),
	},
	"types": {"All": record[types.All]()},
}

const root = "../../testdata/golden"

// dirOf is where a case's contract.tio (conformance.tio for the
// conformance server's contract, testdata/conformance) and fixtures.json
// are.
func dirOf(name string) string {
	if name == "conformance" {
		return "../../testdata/conformance"
	}
	return filepath.Join(root, name)
}

// TestFixtureCoverage checks that every golden case with generated Go whose
// contract declares records, and the conformance contract, has a fixtures
// file with valid and invalid payloads for each record, and generated code
// here to run them with.
func TestFixtureCoverage(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(root, "*", "contract.tio"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	paths = append(paths, filepath.Join(dirOf("conformance"), "conformance.tio"))
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c, diags := check.Source(path, src)
		name := filepath.Base(filepath.Dir(path))
		_, noGo := os.Stat(filepath.Join(filepath.Dir(path), "go"))
		if len(diags) > 0 || (noGo != nil && name != "conformance") || len(c.Types) == 0 {
			continue // generates no code, or has no JSON types (bytes() slots only)
		}
		f := readFixtures(t, name)
		if f.Contract != c.Name {
			t.Errorf("%s: fixtures for contract %q, the case is %q", name, f.Contract, c.Name)
		}
		var declared []string
		for _, ty := range c.Types {
			declared = append(declared, ty.Name)
			e := f.Types[ty.Name]
			if len(e.Valid) == 0 || len(e.Invalid) == 0 {
				t.Errorf("%s: type %s needs valid and invalid fixtures", name, ty.Name)
			}
			if generated[name][ty.Name] == nil {
				t.Errorf("%s: no generated code registered for %s", name, ty.Name)
			}
		}
		for ty := range f.Types {
			if !slices.Contains(declared, ty) {
				t.Errorf("%s: fixtures for %s, which the contract does not declare", name, ty)
			}
		}
	}
}

func readFixtures(t *testing.T, name string) fixtures {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dirOf(name), "fixtures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f fixtures
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s/fixtures.json: %v", name, err)
	}
	return f
}

// TestSpec5_3_Fixtures runs every fixture through the generated Go code.
func TestSpec5_3_Fixtures(t *testing.T) {
	for name, codecs := range generated {
		f := readFixtures(t, name)
		for ty, entries := range f.Types {
			run := codecs[ty]
			if run == nil {
				t.Errorf("%s: no generated code for %s", name, ty)
				continue
			}
			for _, v := range entries.Valid {
				t.Run(name+"/"+ty+"/valid/"+v.Name, func(t *testing.T) {
					if err := checkValid(run, v.Input, v.Canonical); err != nil {
						t.Error(err)
					}
				})
			}
			for _, v := range entries.Invalid {
				t.Run(name+"/"+ty+"/invalid/"+v.Name, func(t *testing.T) {
					if err := checkInvalid(run, v.Input, v.Path, v.Rule); err != nil {
						t.Error(err)
					}
				})
			}
		}
	}
}

// checkValid: the input decodes and re-encodes to exactly the canonical
// bytes, and the canonical form is a fixed point.
func checkValid(run codec, input, canonical string) error {
	for _, in := range []string{input, canonical} {
		out, err := run([]byte(in))
		if err != nil {
			return errors.New("refused " + short(in) + ": " + err.Error())
		}
		if string(out) != canonical {
			return errors.New("re-encoded " + short(in) + "\n as " + short(string(out)) + "\nwant " + short(canonical))
		}
	}
	return nil
}

// checkInvalid: the input is refused with WT_VALIDATION_FAILED and a
// message that is "field '<path>' <rule>" (or "the payload <rule>" for the
// whole payload), followed by nothing or by ", not <shown>".
func checkInvalid(run codec, input, path, rule string) error {
	out, err := run([]byte(input))
	if err == nil {
		return errors.New("accepted " + short(input) + " as " + short(string(out)))
	}
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code != wire.ValidationFailed {
		return errors.New("refused without WT_VALIDATION_FAILED: " + err.Error())
	}
	want := "field '" + path + "' " + rule
	if path == "" {
		want = "the payload " + rule
	}
	rest, ok := strings.CutPrefix(werr.Message, want)
	if !ok || (rest != "" && !strings.HasPrefix(rest, ", not ")) {
		return errors.New("refused with\n  " + short(werr.Message) + "\nwant\n  " + short(want) + "[, not ...]")
	}
	return nil
}

// short keeps a failure readable when a payload nests 512 levels.
func short(s string) string {
	if len(s) > 400 {
		return s[:200] + " … " + s[len(s)-200:]
	}
	return s
}
