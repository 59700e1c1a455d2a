package golang

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocLinksResolve: the generated doc comments point at the runtime's
// documentation ([tio.Peer.Emit]); every such link names a declaration of
// the runtime's source, so a runtime rename cannot leave the links
// dangling.
func TestDocLinksResolve(t *testing.T) {
	t.Chdir("../..")
	src, err := os.ReadFile("testdata/golden/chat/go/chat.tio.go")
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`\[(tio|typed|endpoint)\.(\w+)(?:\.(\w+))?\]`).FindAllStringSubmatch(string(src), -1)
	if len(links) < 20 {
		t.Fatalf("only %d doc links to the runtime", len(links))
	}
	declared := map[string]map[string]bool{}
	for _, pkg := range []string{"tio", "typed", "endpoint"} {
		declared[pkg] = declarations(t, filepath.Join("runtime", pkg))
	}
	for _, l := range links {
		name := l[2]
		if l[3] != "" {
			name += "." + l[3]
		}
		if !declared[l[1]][name] {
			t.Errorf("%s: runtime/%s declares no %s", l[0], l[1], name)
		}
	}
}

// declarations are the package-level names and the Type.Method names of
// the package in dir.
func declarations(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names[d.Name.Name] = true
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if idx, ok := recv.(*ast.IndexExpr); ok {
					recv = idx.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					names[id.Name+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
	}
	return names
}
