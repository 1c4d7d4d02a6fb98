package netbots

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"skyloop/scenario"
)

// File is an experiment file as written.
type File struct {
	Experiment  string   `yaml:"experiment"`
	Description string   `yaml:"description"`
	Seeds       int      `yaml:"seeds"`
	Base        ast.Node `yaml:"base"`
	Sweep       *struct {
		Param  string     `yaml:"param"`
		Values []ast.Node `yaml:"values"`
	} `yaml:"sweep"`
	Variants []struct {
		Name string   `yaml:"name"`
		Set  ast.Node `yaml:"set"`
	} `yaml:"variants"`
	Outputs Outputs `yaml:"outputs"`
}

// Variant is one configuration of an experiment.
type Variant struct {
	Name   string
	Params Params
	// Value is the swept parameter's value as written ("" for named
	// variants).
	Value string
}

// Experiment is a checked experiment: variants x seeds.
type Experiment struct {
	Name        string
	Description string
	Param       string // the swept parameter, "" for named variants
	Seeds       int
	Base        Params
	Variants    []Variant
	Outputs     Outputs
	Source      []byte // the experiment file
	File        string
}

var nameOK = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.=-]*$`)

// LoadExperiment reads and checks an experiment file. Problems come back as
// scenario.Errors with file, line and field path.
func LoadExperiment(path string) (*Experiment, error) {
	data, err := scenario.ReadFile(path)
	if err != nil {
		if _, bad := err.(scenario.Errors); bad {
			return nil, err // larger than scenario.MaxFileSize
		}
		return nil, fmt.Errorf("reading experiment: %w", err)
	}
	return ParseExperiment(filepath.Base(path), data)
}

// ParseExperiment checks experiment text.
func ParseExperiment(name string, data []byte) (*Experiment, error) {
	doc, err := scenario.ParseDocument(name, data)
	if err != nil {
		return nil, err
	}
	f := File{Seeds: 5, Outputs: Outputs{Trace: true, Deliveries: true, Robots: true}}
	doc.Decode(doc.Root, "", &f)
	e := &Experiment{Name: f.Experiment, Description: f.Description, Seeds: f.Seeds, Outputs: f.Outputs, Source: data, File: name}
	if e.Name == "" {
		e.Name = strings.TrimSuffix(name, filepath.Ext(name))
	}
	if !nameOK.MatchString(e.Name) {
		doc.Errorf(doc.Root, "experiment", "%q: use letters, digits, '.', '_', '-' (it names the output directory)", e.Name)
	}
	if f.Seeds < 1 || f.Seeds > 1000 {
		doc.Errorf(doc.Root, "seeds", "must be 1..1000, got %d", f.Seeds)
	}
	e.Base = Defaults()
	doc.Decode(f.Base, "base", &e.Base)
	check := func(p *Params, path string, at ast.Node) {
		bad := p.Validate()
		for _, k := range sortedKeys(bad) {
			doc.Errorf(at, path+"."+k, "%s", bad[k])
		}
	}
	switch {
	case f.Sweep != nil && len(f.Variants) > 0:
		doc.Errorf(doc.Root, "sweep", "give either sweep or variants, not both")
	case f.Sweep != nil:
		e.Param = f.Sweep.Param
		if len(f.Sweep.Values) == 0 {
			doc.Errorf(doc.Root, "sweep.values", "needs at least one value")
		}
		// Two values written alike would write into one directory, and two
		// that decode alike (0.1 and 0.10, 1s and 1000ms) would run the
		// same variant twice.
		type first struct {
			index int
			value string
		}
		names := map[string]first{}
		decoded := map[string]first{}
		for i, v := range f.Sweep.Values {
			// The variants share the base's waypoint list: decoding a
			// value replaces a list, it never writes into one.
			p := e.Base
			path := fmt.Sprintf("sweep.values[%d]", i)
			if !doc.DecodeField(v, path, &p, f.Sweep.Param) {
				continue
			}
			val := strings.TrimSpace(v.String())
			name, key := f.Sweep.Param+"="+val, fieldKey(&p, f.Sweep.Param)
			if prev, dup := names[name]; dup {
				doc.Errorf(v, path, "%s repeats sweep.values[%d]: each value must appear once", val, prev.index)
				continue
			}
			if prev, dup := decoded[key]; dup {
				doc.Errorf(v, path, "%s is the same %s as sweep.values[%d] (%s): each value must appear once", val, f.Sweep.Param, prev.index, prev.value)
				continue
			}
			names[name], decoded[key] = first{i, val}, first{i, val}
			e.Variants = append(e.Variants, Variant{Name: name, Params: p, Value: val})
			check(&p, path, v)
		}
	case len(f.Variants) > 0:
		seen := map[string]bool{}
		for i, v := range f.Variants {
			path := fmt.Sprintf("variants[%d]", i)
			if !nameOK.MatchString(v.Name) || seen[v.Name] {
				doc.Errorf(v.Set, path+".name", "%q: names must be unique and use letters, digits, '.', '_', '=', '-'", v.Name)
			}
			seen[v.Name] = true
			p := e.Base
			if doc.Decode(v.Set, path+".set", &p) {
				e.Variants = append(e.Variants, Variant{Name: v.Name, Params: p})
				check(&p, path+".set", v.Set)
			}
		}
	default:
		check(&e.Base, "base", f.Base)
		e.Variants = []Variant{{Name: "base", Params: e.Base}}
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	return e, nil
}

// fieldKey returns the value of the field of p whose YAML name is name, as
// JSON: equal keys mean equal values.
func fieldKey(p *Params, name string) string {
	v := reflect.ValueOf(p).Elem()
	for i := 0; i < v.NumField(); i++ {
		if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); tag == name {
			b, _ := json.Marshal(v.Field(i).Interface())
			return string(b)
		}
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks
}

// runKey is a hash of everything that decides a run's results: a finished
// run directory whose key matches is not run again.
func runKey(p Params, seed uint64, out Outputs) string {
	b, _ := json.Marshal(struct {
		P    Params
		Seed uint64
		Out  Outputs
	}{p, seed, out})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// finished reports whether dir holds a complete run with the given key.
func finished(dir, key string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return false
	}
	var s struct {
		Key string `json:"key"`
	}
	return json.Unmarshal(b, &s) == nil && s.Key == key
}

// errNoRuns is returned by Summarize for a directory without experiments.
var errNoRuns = errors.New("no experiment results")
