package tests

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const layoutModule = "github.com/segfs/segfs"

// TestLayoutImportDirection enforces DESIGN.md §1: index ← logstore ← {fs,
// fetch} ← cli ← main. Each package's full dependency set (go list -deps,
// so an indirect import through a helper package counts too) must avoid
// the packages it may not reach.
func TestLayoutImportDirection(t *testing.T) {
	deps := layoutDeps(t)
	forbidden := map[string][]string{
		// The storage engine knows nothing of its adapters or of the
		// ways it is exposed.
		"index":           {"logstore", "fs", "fetch", "cli", "github.com/hanwen/go-fuse", "github.com/urfave/cli", "net"},
		"logstore/record": {"logstore", "index", "fs", "fetch", "cli", "github.com/hanwen/go-fuse", "github.com/urfave/cli", "net"},
		"logstore":        {"fs", "fetch", "cli", "github.com/hanwen/go-fuse", "github.com/urfave/cli", "net", "github.com/twmb/franz-go"},
		// The two adapters talk to logstore, never to each other.
		"fs":    {"fetch", "cli", "github.com/urfave/cli", "github.com/twmb/franz-go"},
		"fetch": {"fs", "cli", "github.com/hanwen/go-fuse", "github.com/urfave/cli"},
		"cli":   {"main"},
	}
	for pkg, bad := range forbidden {
		ds, ok := deps[layoutModule+"/"+pkg]
		if !ok {
			if pkg == "fs" || pkg == "fetch" {
				continue // not written yet
			}
			t.Errorf("package %s not found by go list", pkg)
			continue
		}
		for _, d := range ds {
			for _, b := range bad {
				if b == "net" { // the standard package itself, not net/url etc.
					if d == "net" {
						t.Errorf("%s depends on net", pkg)
					}
					continue
				}
				target := b
				if !strings.Contains(b, ".") {
					target = layoutModule + "/" + b
				}
				if d == target || strings.HasPrefix(d, target+"/") {
					t.Errorf("%s depends on %s (forbidden: %s)", pkg, d, b)
				}
			}
		}
	}
}

// TestLayoutMainImportsOnlyCli checks main's direct imports: the binary's whole
// behaviour lives in cli.
func TestLayoutMainImportsOnlyCli(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{join .Imports \"\\n\"}}", "..").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, layoutModule+"/") && imp != layoutModule+"/cli" {
			t.Errorf("main.go imports %s; it should only call cli", imp)
		}
	}
}

// layoutDeps maps each package of the module to its transitive
// dependencies (test files excluded: tests may reach further).
func layoutDeps(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Deps", "../...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		deps[p.ImportPath] = p.Deps
	}
	return deps
}
