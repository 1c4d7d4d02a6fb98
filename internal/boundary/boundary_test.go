package boundary

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the module's directory, seen from this package's.
const root = "../.."

// module is the module path; packages are listed without it.
const module = "skyloop"

// entry is one package line of docs/boundary.txt.
type entry struct {
	layer, why string
}

// allowed is one allow line: core package pkg may import imp (a package
// path or a wall-clock function such as time.Now) for reason why.
type allowed struct {
	pkg, imp, why string
}

// list is docs/boundary.txt, parsed.
type list struct {
	pkgs   map[string]entry // by import path
	allows []allowed
}

func (l *list) permits(pkg, imp string) bool {
	return slices.ContainsFunc(l.allows, func(a allowed) bool { return a.pkg == pkg && a.imp == imp })
}

// readList parses docs/boundary.txt, failing the test on a malformed line.
func readList(t *testing.T) *list {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "boundary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l := &list{pkgs: map[string]entry{}}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		where := fmt.Sprintf("docs/boundary.txt:%d", n)
		switch fs[0] {
		case "core", "edge", "program":
			if len(fs) < 3 {
				t.Fatalf("%s: want LAYER PACKAGE WHY, got %q", where, line)
			}
			p := module + "/" + fs[1]
			if _, dup := l.pkgs[p]; dup {
				t.Fatalf("%s: %s is listed twice", where, fs[1])
			}
			l.pkgs[p] = entry{layer: fs[0], why: strings.Join(fs[2:], " ")}
		case "allow":
			if len(fs) < 4 {
				t.Fatalf("%s: want allow PACKAGE IMPORT WHY, got %q", where, line)
			}
			l.allows = append(l.allows, allowed{pkg: module + "/" + fs[1], imp: qualify(fs[2]), why: strings.Join(fs[3:], " ")})
		default:
			t.Fatalf("%s: unknown layer %q (core, edge, program or allow)", where, fs[0])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, a := range l.allows {
		if l.pkgs[a.pkg].layer != "core" {
			t.Errorf("docs/boundary.txt: allow %s: only core packages need an allowlist", strings.TrimPrefix(a.pkg, module+"/"))
		}
	}
	return l
}

// qualify makes an allow line's import a path: a package of the module is
// written without "skyloop/" (as in the package lines); standard and
// outside packages, and wall-clock functions (time.Now), as they are.
func qualify(imp string) string {
	if st, err := os.Stat(filepath.Join(root, imp)); err == nil && st.IsDir() {
		return module + "/" + imp
	}
	return imp
}

// goList runs go list in the module's directory and returns its output.
func goList(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// pkgInfo is what the tests need of go list -json.
type pkgInfo struct {
	ImportPath string
	Name       string
	Dir        string
	Standard   bool
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
}

// listJSON runs go list -json with args and decodes every package.
func listJSON(t *testing.T, args ...string) map[string]*pkgInfo {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(goList(t, append([]string{"-json"}, args...)...)))
	m := map[string]*pkgInfo{}
	for {
		var p pkgInfo
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -json: %v", err)
		}
		m[p.ImportPath] = &p
	}
	return m
}

func (l *list) core() []string {
	var c []string
	for p, e := range l.pkgs {
		if e.layer == "core" {
			c = append(c, p)
		}
	}
	slices.Sort(c)
	return c
}

// TestEveryPackageIsListed: every package of the module is in
// docs/boundary.txt once, every listed package exists, and the program
// layer is exactly the main packages.
func TestEveryPackageIsListed(t *testing.T) {
	l := readList(t)
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(goList(t, "-f", "{{.ImportPath}} {{.Name}}", "./..."))), "\n") {
		path, name, _ := strings.Cut(line, " ")
		seen[path] = true
		e, ok := l.pkgs[path]
		switch {
		case !ok:
			t.Errorf("docs/boundary.txt: %s is not listed; add it as core (touches nothing outside the process) or edge (say what it touches)", path)
		case (name == "main") != (e.layer == "program"):
			t.Errorf("docs/boundary.txt: %s (package %s) is listed as %s; main packages, and only they, are program", path, name, e.layer)
		}
	}
	for p := range l.pkgs {
		if !seen[p] {
			t.Errorf("docs/boundary.txt: %s is listed but is not a package of the module", p)
		}
	}
}

// forbidden says why the core may not import imp, or "" when it may.
func (l *list) forbidden(imp string) string {
	switch {
	case strings.HasPrefix(imp, module+"/"):
		e, ok := l.pkgs[imp]
		if !ok {
			return "a package missing from docs/boundary.txt"
		}
		if e.layer != "core" {
			return "an " + e.layer + " package (" + e.why + ")"
		}
		return ""
	case imp == "os" || strings.HasPrefix(imp, "os/"):
		return "files, processes, the environment"
	case imp == "net/netip" || imp == "net/url":
		return "" // values: addresses and URLs, no sockets
	case imp == "net" || strings.HasPrefix(imp, "net/"):
		return "sockets"
	case imp == "syscall" || strings.HasPrefix(imp, "golang.org/x/sys/"):
		return "system calls"
	case imp == "github.com/ebitengine/purego" || strings.HasPrefix(imp, "github.com/ebitengine/purego/"):
		return "foreign libraries (purego)"
	case imp == "C":
		return "cgo"
	case imp == "plugin":
		return "loaded code"
	}
	return ""
}

// TestCoreImportsNothingOutside runs go list -deps over every core package
// and follows the module's own imports from each: no core package may
// reach, directly or through other packages of the module, an edge package
// or a standard or outside package that reaches outside the process,
// except by an allow line. Packages outside the module are not followed
// (fmt imports os; what matters is what our code calls).
func TestCoreImportsNothingOutside(t *testing.T) {
	l := readList(t)
	core := l.core()
	pkgs := listJSON(t, append([]string{"-deps"}, core...)...)
	used := map[allowed]bool{}
	for _, start := range core {
		if pkgs[start] == nil {
			t.Errorf("go list -deps did not list core package %s", start)
			continue
		}
		// Breadth first, so that the chain reported is a shortest one.
		from := map[string]string{start: ""}
		queue := []string{start}
		reported := map[string]bool{}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			for _, imp := range pkgs[p].Imports {
				if l.permits(p, imp) {
					used[allowed{pkg: p, imp: imp}] = true
					continue
				}
				if why := l.forbidden(imp); why != "" {
					if !reported[imp] {
						reported[imp] = true
						t.Errorf("core package %s imports %s, %s: %s", short(start), short(imp), why, chain(from, p, imp))
					}
					continue
				}
				if _, ok := from[imp]; !ok && strings.HasPrefix(imp, module+"/") {
					from[imp] = p
					queue = append(queue, imp)
				}
			}
		}
	}
	for _, a := range l.allows {
		if !strings.HasPrefix(a.imp, "time.") && !used[allowed{pkg: a.pkg, imp: a.imp}] {
			t.Errorf("docs/boundary.txt: allow %s %s is no longer needed; remove it", short(a.pkg), short(a.imp))
		}
	}
}

// chain writes the imports from the start of a search to p, then imp.
func chain(from map[string]string, p, imp string) string {
	c := []string{short(imp)}
	for ; p != ""; p = from[p] {
		c = append(c, short(p))
	}
	slices.Reverse(c)
	return strings.Join(c, " -> ")
}

func short(p string) string { return strings.TrimPrefix(p, module+"/") }

// wallClock are the time package's functions that read or wait for the
// wall clock.
var wallClock = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}

// TestCoreReadsNoWallClock: no core package's non-test source names
// time.Now, time.Since, time.Sleep or a timer (called or passed as a
// value), except by an allow line (allow PACKAGE time.Now WHY). Simulated
// time is sim.Time; the wall clock belongs to the edges (the runner's
// pacing).
func TestCoreReadsNoWallClock(t *testing.T) {
	l := readList(t)
	core := l.core()
	pkgs := listJSON(t, core...)
	used := map[allowed]bool{}
	fset := token.NewFileSet()
	for _, p := range core {
		info := pkgs[p]
		if info == nil {
			t.Errorf("go list did not list core package %s", p)
			continue
		}
		for _, name := range append(slices.Clone(info.GoFiles), info.CgoFiles...) {
			path := filepath.Join(info.Dir, name)
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			timeName := ""
			for _, im := range f.Imports {
				if v, _ := strconv.Unquote(im.Path.Value); v == "time" {
					timeName = "time"
					if im.Name != nil {
						timeName = im.Name.Name
					}
				}
			}
			if timeName == "" {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != timeName || !slices.Contains(wallClock, sel.Sel.Name) {
					return true
				}
				fn := "time." + sel.Sel.Name
				if l.permits(p, fn) {
					used[allowed{pkg: p, imp: fn}] = true
					return true
				}
				pos := fset.Position(sel.Pos())
				t.Errorf("%s/%s:%d: core package %s reads the wall clock (%s); take a clock from the edge instead", short(p), filepath.Base(pos.Filename), pos.Line, short(p), fn)
				return true
			})
		}
	}
	for _, a := range l.allows {
		if strings.HasPrefix(a.imp, "time.") && !used[allowed{pkg: a.pkg, imp: a.imp}] {
			t.Errorf("docs/boundary.txt: allow %s %s is no longer needed; remove it", short(a.pkg), a.imp)
		}
	}
}

// TestArchitectureTableIsTheList: docs/architecture.md's package table and
// its "not yet at the edge" table say what docs/boundary.txt says, row for
// row (scripts/package-diagram.sh writes them).
func TestArchitectureTableIsTheList(t *testing.T) {
	l := readList(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "<!-- boundary-table:begin -->")
	block, _, ok2 := strings.Cut(block, "<!-- boundary-table:end -->")
	if !ok || !ok2 {
		t.Fatal("docs/architecture.md: no <!-- boundary-table:begin/end --> block")
	}
	pkgs := map[string]entry{}
	var allows []allowed
	for _, line := range strings.Split(block, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 3 || !strings.HasPrefix(cells[0], "`") {
			continue
		}
		p := module + "/" + strings.Trim(cells[0], "`")
		if strings.HasPrefix(cells[1], "`") {
			allows = append(allows, allowed{pkg: p, imp: qualify(strings.Trim(cells[1], "`")), why: cells[2]})
			continue
		}
		pkgs[p] = entry{layer: cells[1], why: cells[2]}
	}
	for p, e := range l.pkgs {
		if d, ok := pkgs[p]; !ok {
			t.Errorf("docs/architecture.md: %s (%s) is missing from the package table", short(p), e.layer)
		} else if d != e {
			t.Errorf("docs/architecture.md: %s is %q in the table, %q in docs/boundary.txt", short(p), d.layer+": "+d.why, e.layer+": "+e.why)
		}
	}
	for p := range pkgs {
		if _, ok := l.pkgs[p]; !ok {
			t.Errorf("docs/architecture.md: %s is in the package table but not in docs/boundary.txt", short(p))
		}
	}
	for i := range max(len(allows), len(l.allows)) {
		var d, a allowed
		if i < len(allows) {
			d = allows[i]
		}
		if i < len(l.allows) {
			a = l.allows[i]
		}
		if d != a {
			t.Errorf("docs/architecture.md: row %d of the \"not yet at the edge\" table is %q, docs/boundary.txt's allow line is %q",
				i+1, strings.Join([]string{short(d.pkg), short(d.imp), d.why}, " "), strings.Join([]string{short(a.pkg), short(a.imp), a.why}, " "))
		}
	}
	if t.Failed() {
		t.Log("run scripts/package-diagram.sh")
	}
}
