// Package walk follows the path of a value through the module's code, to
// measure how straight it is: from a list of root functions it walks the
// static calls, depth first, in source order, each function once, and notes
// every time the walk enters or leaves a package (a "stay" is a stretch of
// the walk inside one package). docs/architecture.md reports its figures for
// the walk from a scenario file to a built run.
//
// The walk is static: it follows calls of functions and of methods on
// concrete types, and a function or method value passed as an argument (a
// callback) as if the callee called it at once. Calls through interfaces
// and through function-typed fields are not followed.
//
// Loading runs `go list` and reads the compiler's export data, so the
// package is an edge (docs/boundary.txt); only its tests use it.
package walk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Program is the module's packages, parsed and type-checked.
type Program struct {
	module  string
	funcs   map[string]fn              // by types.Func.FullName
	imports map[string]map[string]bool // package -> every package it imports, transitively
}

type fn struct {
	pkg  string
	file string // relative to the module root
	decl *ast.FuncDecl
	info *types.Info
}

type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
	Standard   bool
	Deps       []string
	Module     *struct{ Path, Dir string }
}

// Load lists, parses and type-checks every package of the module in dir
// (the non-test files), with their dependencies read from the compiler's
// export data.
func Load(dir string) (*Program, error) {
	// -pgo=off: with cmd/skyloop's default.pgo, go list would report
	// that command's dependencies as profile-guided variants ("runtime/pprof
	// [skyloop/cmd/skyloop]"), under other import paths; the walk is about
	// the source, which the profile does not change.
	cmd := exec.Command("go", "list", "-pgo=off", "-e", "-export", "-deps", "-json", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	exports := map[string]string{}
	var mods []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	var root string
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading go list's output: %w", err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && !p.Standard && filepath.Clean(p.Module.Dir) == mustAbs(dir) {
			mods = append(mods, p)
			root = p.Module.Path
		}
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("go list found no package of the module in %s", dir)
	}
	prog := &Program{module: root, funcs: map[string]fn{}, imports: map[string]map[string]bool{}}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f := exports[path]
		if f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	for _, p := range mods {
		deps := map[string]bool{}
		for _, d := range p.Deps {
			deps[d] = true
		}
		prog.imports[p.ImportPath] = deps
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, fmt.Errorf("parsing %s: %w", name, err)
			}
			files = append(files, f)
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{},
			Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: imp, Error: func(error) {}}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			return nil, fmt.Errorf("type-checking %s: %w", p.ImportPath, err)
		}
		for _, f := range files {
			rel, _ := filepath.Rel(mustAbs(dir), fset.File(f.Pos()).Name())
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				if obj, ok := info.Defs[fd.Name].(*types.Func); ok {
					prog.funcs[obj.FullName()] = fn{pkg: p.ImportPath, file: rel, decl: fd, info: info}
				}
			}
		}
	}
	return prog, nil
}

func mustAbs(dir string) string {
	a, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	return filepath.Clean(a)
}

// Stay is one stretch of a walk inside one package.
type Stay struct {
	// Package is the package's import path without the module's prefix.
	Package string
	// Files are the files the stretch visits, in order, without repeats
	// in a row.
	Files []string
	// Climb is true when the walk came into this package by a call from
	// a package this one imports: back up the import graph, through a
	// callback.
	Climb bool
}

// Walk is the path of a walk: its stays in order.
type Walk struct {
	Stays []Stay
	// Missing are root functions that were not found.
	Missing []string
	// Calls counts the call sites, in the functions walked, from one
	// package into another ("engine -> scenario"), whether or not the
	// walk went into the callee again.
	Calls map[string]int
}

// Walk walks from the roots in order (full function names such as
// "skyloop/engine.Build" or "(*skyloop/engine.Run).Start"), sharing one
// set of visited functions.
func (p *Program) Walk(roots ...string) *Walk {
	w := &walker{p: p, seen: map[string]bool{}, out: &Walk{Calls: map[string]int{}}}
	for _, r := range roots {
		f, ok := p.funcs[r]
		if !ok {
			w.out.Missing = append(w.out.Missing, r)
			continue
		}
		w.seen[r] = true
		w.enter(f, false)
		w.body(f)
	}
	return w.out
}

type walker struct {
	p    *Program
	seen map[string]bool
	out  *Walk
	cur  fn
}

// short is a package's import path without the module's prefix.
func (p *Program) short(pkg string) string {
	if s := strings.TrimPrefix(strings.TrimPrefix(pkg, p.module), "/"); s != "" {
		return s
	}
	return p.module
}

// enter moves the walk into f.
func (w *walker) enter(f fn, climb bool) {
	pkg := w.p.short(f.pkg)
	n := len(w.out.Stays)
	if n == 0 || w.out.Stays[n-1].Package != pkg {
		w.out.Stays = append(w.out.Stays, Stay{Package: pkg, Climb: climb})
		n++
	}
	s := &w.out.Stays[n-1]
	if len(s.Files) == 0 || s.Files[len(s.Files)-1] != f.file {
		s.Files = append(s.Files, f.file)
	}
	w.cur = f
}

// body walks f's calls in source order.
func (w *walker) body(f fn) {
	ast.Inspect(f.decl.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		name := w.callee(f.info, call.Fun)
		if name != "" {
			w.call(f, f, name)
		}
		g, inModule := w.p.funcs[name]
		for _, a := range call.Args {
			// A function or method value handed to the callee: the
			// callee calls it (or, when the callee is outside the
			// module, the caller's side does).
			if cb := w.value(f.info, a); cb != "" {
				if inModule {
					w.call(f, g, cb)
				} else {
					w.call(f, f, cb)
				}
			}
		}
		return true
	})
}

// call walks the function named name, called from by (f itself, or the
// function f handed it to), on f's way.
func (w *walker) call(f, by fn, name string) {
	g, ok := w.p.funcs[name]
	if !ok {
		return
	}
	if g.pkg != by.pkg {
		w.out.Calls[w.p.short(by.pkg)+" -> "+w.p.short(g.pkg)]++
	}
	if w.seen[name] {
		return
	}
	w.seen[name] = true
	if by.decl != f.decl {
		w.enter(by, false)
	}
	climb := g.pkg != by.pkg && w.p.imports[g.pkg][by.pkg]
	w.enter(g, climb)
	w.body(g)
	if by.decl != f.decl {
		w.enter(by, false)
	}
	w.enter(f, false)
}

// callee names the function a call expression calls statically ("" for
// calls through interfaces, function values and conversions).
func (w *walker) callee(info *types.Info, e ast.Expr) string {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		if fn, ok := info.Uses[x].(*types.Func); ok {
			return fn.Origin().FullName()
		}
	case *ast.SelectorExpr:
		if sel, ok := info.Selections[x]; ok {
			if sel.Kind() != types.MethodVal || types.IsInterface(sel.Recv()) {
				return ""
			}
			if fn, ok := sel.Obj().(*types.Func); ok {
				if types.IsInterface(fn.Type().(*types.Signature).Recv().Type()) {
					return "" // a method promoted from an embedded interface
				}
				return fn.Origin().FullName()
			}
			return ""
		}
		if fn, ok := info.Uses[x.Sel].(*types.Func); ok {
			return fn.Origin().FullName()
		}
	case *ast.IndexExpr:
		return w.callee(info, x.X) // a generic function instantiated
	case *ast.IndexListExpr:
		return w.callee(info, x.X)
	}
	return ""
}

// value names the function a function or method value refers to ("" when
// e is not one).
func (w *walker) value(info *types.Info, e ast.Expr) string {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident, *ast.SelectorExpr:
		return w.callee(info, x)
	}
	return ""
}

// Figures sums up a walk.
type Figures struct {
	// Stays is the number of stretches, Packages the number of different
	// packages among them.
	Stays, Packages int
	// Returns counts the stays in a package the walk had already left
	// (Stays - Packages).
	Returns int
	// Climbs counts the stays entered back up the import graph.
	Climbs int
	// PackageStays and FileVisits count stays per package and visits per
	// file (a file visited again after the walk left it counts again).
	PackageStays map[string]int
	FileVisits   map[string]int
}

// Figures sums up the walk.
func (w *Walk) Figures() Figures {
	f := Figures{PackageStays: map[string]int{}, FileVisits: map[string]int{}}
	for _, s := range w.Stays {
		f.Stays++
		if f.PackageStays[s.Package] == 0 {
			f.Packages++
		}
		f.PackageStays[s.Package]++
		if s.Climb {
			f.Climbs++
		}
		for _, file := range s.Files {
			f.FileVisits[file]++
		}
	}
	f.Returns = f.Stays - f.Packages
	return f
}

// String is the walk, one stay a line.
func (w *Walk) String() string {
	var b strings.Builder
	for i, s := range w.Stays {
		mark := ""
		if s.Climb {
			mark = " (climb)"
		}
		fmt.Fprintf(&b, "%2d %s%s: %s\n", i+1, s.Package, mark, strings.Join(s.Files, " "))
	}
	return b.String()
}
