package sweep

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"skyloop/internal/untrusted"
	"skyloop/report"
)

// Shard is one part of a sweep split over several processes or machines:
// shard Index of Count runs the runs whose stable key (the experiment's
// name, the variant and the seed) hashes to Index, and the reference runs
// whose key does. The shards together run every run once; Merge puts them
// together. The zero Shard is the whole sweep.
type Shard struct {
	Index, Count int
}

// ParseShard reads K/N (0 <= K < N), as skyloop sweep --shard takes it.
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Shard{}, fmt.Errorf("--shard %q: want K/N, shard K of N with 0 <= K < N (e.g. 0/4 ... 3/4)", s)
	}
	ki, err1 := strconv.Atoi(strings.TrimSpace(k))
	ni, err2 := strconv.Atoi(strings.TrimSpace(n))
	if err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("--shard %q: K and N must be whole numbers, as in 0/4 ... 3/4", s)
	}
	sh := Shard{Index: ki, Count: ni}
	if err := sh.check(); err != nil || ni == 0 {
		if err == nil {
			err = errors.New("N (the number of shards) must be at least 1, got 0")
		}
		return Shard{}, fmt.Errorf("--shard %q: %w", s, err)
	}
	return sh, nil
}

// maxShards bounds N: more shards than runs leaves shards idle, and a
// sweep holds at most MaxVariants x 1000 runs.
const maxShards = 1_000_000

func (s Shard) check() error {
	switch {
	case s.Count == 0 && s.Index == 0:
		return nil
	case s.Count < 1:
		return fmt.Errorf("N (the number of shards) must be at least 1, got %d", s.Count)
	case s.Count > maxShards:
		return fmt.Errorf("N (the number of shards) must be at most %d, got %d", maxShards, s.Count)
	case s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("K must be 0..%d for %d shards (shards count from 0), got %d", s.Count-1, s.Count, s.Index)
	}
	return nil
}

// Sharded reports whether s is a part of a sweep rather than all of it.
func (s Shard) Sharded() bool { return s.Count > 0 }

// String is K/N.
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// file is the name of the shard's manifest in the experiment directory.
func (s Shard) file() string { return fmt.Sprintf("shard-%d-of-%d.json", s.Index, s.Count) }

// owns reports whether the shard runs the run or reference of stable key k.
func (s Shard) owns(k string) bool { return !s.Sharded() || shardOf(k, s.Count) == s.Index }

// shardOf maps a stable key to a shard with FNV-1a (64 bits): the same on
// every machine, in every process, for every Go version.
func shardOf(k string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(k))
	return int(h.Sum64() % uint64(n))
}

// runShardKey is the stable key a run is sharded by: the experiment's name
// (which carries the --backend and --set tag suffixes), the variant and
// the seed. It does not change with --duration or --seeds, so that a run
// stays on its shard.
func runShardKey(experiment, variant string, seed int) string {
	return experiment + "\x00" + variant + "\x00seed" + strconv.Itoa(seed)
}

// refShardKey is the stable key of a reference run: the experiment's name
// and the reference's configuration key.
func refShardKey(experiment, refKey string) string {
	return experiment + "\x00reference/" + refKey
}

// plan is what a sweep runs and what its sweep-level files (summary.csv,
// meta.json, figures, analysis) are made from, in a form a shard writes
// down for Merge: with it, the merge needs neither the experiment file nor
// its scenario.
type plan struct {
	Experiment  string        `json:"experiment"`
	Description string        `json:"description,omitempty"`
	File        string        `json:"file"`
	Spec        string        `json:"spec"`
	Scenario    string        `json:"scenario"`
	Param       string        `json:"param,omitempty"`
	Backend     string        `json:"backend,omitempty"`
	Analysis    *Analysis     `json:"analysis,omitempty"`
	Seeds       int           `json:"seeds"`
	NoFiles     bool          `json:"no_files"`
	Variants    []planVariant `json:"variants"`
}

// planVariant is a variant of a plan. Config is the effective
// configuration exactly as the run keys hash it; Reference the key of its
// reference run ("" without one).
type planVariant struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Config    string `json:"config"`
	Reference string `json:"reference,omitempty"`
}

func makePlan(e *Experiment, preps []prepared, seeds int, noFiles bool) plan {
	p := plan{Experiment: e.Name, Description: e.Description, File: e.File, Spec: string(e.Source), Scenario: e.Scenario,
		Param: e.Param, Backend: e.Backend, Analysis: e.Analysis, Seeds: seeds, NoFiles: noFiles}
	for _, pr := range preps {
		p.Variants = append(p.Variants, planVariant{Name: pr.v.Name, Value: pr.v.Value, Config: string(pr.eff), Reference: pr.refKey})
	}
	return p
}

// experiment returns what the sweep-level files need of the experiment and
// its variants.
func (p *plan) experiment() (*Experiment, []prepared) {
	e := &Experiment{Name: p.Experiment, Description: p.Description, File: p.File, Source: []byte(p.Spec), Scenario: p.Scenario,
		Param: p.Param, Backend: p.Backend, Analysis: p.Analysis, Seeds: p.Seeds}
	preps := make([]prepared, len(p.Variants))
	for i, v := range p.Variants {
		e.Variants = append(e.Variants, Variant{Name: v.Name, Value: v.Value})
		preps[i] = prepared{eff: []byte(v.Config), refKey: v.Reference}
	}
	for i := range preps {
		preps[i].v = &e.Variants[i]
	}
	return e, preps
}

// runKey is the key of variant eff's run of seed s: a finished run
// directory whose meta.json has it is not run again.
func runKey(eff []byte, seed int, noFiles bool) string {
	return hash(eff, fmt.Sprintf("seed=%d nofiles=%v", seed, noFiles))
}

// runKeys returns the runKey of every seed 1..seeds of eff, hashing eff
// once: a plan's configurations may be large, and a merge computes the
// keys of up to MaxSeeds seeds of each.
func runKeys(eff []byte, seeds int, noFiles bool) []string {
	h := sha256.New()
	h.Write(eff)
	h.Write([]byte{0})
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	keys := make([]string, seeds)
	for s := 1; s <= seeds; s++ {
		if err != nil {
			keys[s-1] = runKey(eff, s, noFiles)
			continue
		}
		g := sha256.New()
		if g.(encoding.BinaryUnmarshaler).UnmarshalBinary(state) != nil {
			keys[s-1] = runKey(eff, s, noFiles)
			continue
		}
		fmt.Fprintf(g, "seed=%d nofiles=%v", s, noFiles)
		keys[s-1] = hex.EncodeToString(g.Sum(nil)[:8])
	}
	return keys
}

// Shard states in a manifest.
const (
	stateRunning = "running" // started, or killed before it could say otherwise
	stateDone    = "done"
	stateStopped = "stopped"
	stateFailed  = "failed"
)

// manifest is shard-K-of-N.json in the experiment directory: the shard's
// share of the sweep, its state and the sweep's plan. It is the only
// sweep-level file a shard writes, and each shard writes its own, so
// shards may share a directory.
type manifest struct {
	Shard  int    `json:"shard"`
	Shards int    `json:"shards"`
	State  string `json:"state"`
	Error  string `json:"error,omitempty"`
	// Command is the command line the shard was started with, to tell
	// how to run it again.
	Command    []string          `json:"command,omitempty"`
	Runs       []manifestRun     `json:"runs"`
	References []string          `json:"references"`
	Versions   map[string]string `json:"versions"`
	Plan       plan              `json:"plan"`
}

// manifestRun is a run of a shard.
type manifestRun struct {
	Variant string `json:"variant"`
	Seed    int    `json:"seed"`
	Key     string `json:"key"`
}

// write puts the manifest in dir, atomically (a temporary file renamed).
func (m *manifest) write(dir string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	name := filepath.Join(dir, Shard{m.Shard, m.Shards}.file())
	if err := report.WriteFile(name, append(b, '\n')); err != nil {
		return fmt.Errorf("the shard's manifest: %w", err)
	}
	return nil
}

var manifestName = regexp.MustCompile(`^shard-(\d+)-of-(\d+)\.json$`)

// ManifestError is a shard manifest that is not what skyloop sweep
// --shard writes: a field that a sweep would never write (a name that
// cannot name a directory, a plan beyond a sweep's limits), or manifests
// that disagree with each other. Manifests are read as untrusted input:
// they may come from other machines, and a merge writes where they say.
type ManifestError struct {
	File  string // the manifest
	Field string // the field at fault ("" for the whole file)
	Err   error
}

// Error names the file, the field and the problem.
func (e *ManifestError) Error() string {
	at := e.File
	if e.Field != "" {
		at += ": " + e.Field
	}
	return fmt.Sprintf("%s: %v: not a manifest skyloop sweep --shard wrote (edited, or damaged?); run the shard again", at, e.Err)
}

func (e *ManifestError) Unwrap() error { return e.Err }

// readManifest reads a shard's manifest as untrusted input (a regular file
// under untrusted.MaxJSON inside its directory) and checks it against its
// name, its directory and the rules a sweep applies (check).
func readManifest(path string) (*manifest, error) {
	b, err := untrusted.ReadFileIn(filepath.Dir(path), filepath.Base(path), untrusted.MaxJSON)
	if err != nil {
		return nil, &ManifestError{File: path, Err: err}
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, &ManifestError{File: path, Err: err}
	}
	sm := manifestName.FindStringSubmatch(filepath.Base(path))
	if sm == nil || sm[1] != strconv.Itoa(m.Shard) || sm[2] != strconv.Itoa(m.Shards) {
		return nil, &ManifestError{File: path, Field: "shard", Err: fmt.Errorf("says it is shard %d of %d: the file was renamed or edited", m.Shard, m.Shards)}
	}
	if err := (Shard{m.Shard, m.Shards}).check(); err != nil || m.Shards == 0 {
		return nil, &ManifestError{File: path, Field: "shards", Err: fmt.Errorf("shard %d of %d is not a shard", m.Shard, m.Shards)}
	}
	if len(m.Plan.Variants) == 0 {
		return nil, &ManifestError{File: path, Field: "plan.variants", Err: errors.New("none")}
	}
	if err := m.check(); err != nil {
		err.File = path
		return nil, err
	}
	if dir := filepath.Base(filepath.Dir(path)); dir != m.Plan.Experiment {
		// A shard writes its manifest into <out>/<experiment>.
		return nil, &ManifestError{File: path, Field: "plan.experiment",
			Err: fmt.Errorf("%q, but the manifest is in a directory %q: a shard writes it into its experiment's directory", m.Plan.Experiment, dir)}
	}
	return &m, nil
}

// runKeyOK matches the keys of runs and references (hash).
var runKeyOK = regexp.MustCompile(`^[0-9a-f]{16}$`)

// check applies to a manifest the rules a sweep applies when it plans:
// names that name a directory (an experiment's name as in an experiment
// file, a variant's as the directory of its runs), at most MaxSeeds seeds
// and MaxVariants variants, keys that are keys, and runs and references
// that are the plan's. It checks sizes before anything is allocated for
// them.
func (m *manifest) check() *ManifestError {
	bad := func(field, format string, args ...any) *ManifestError {
		return &ManifestError{Field: field, Err: fmt.Errorf(format, args...)}
	}
	p := &m.Plan
	switch m.State {
	case stateRunning, stateDone, stateStopped, stateFailed:
	default:
		return bad("state", "%q is not a shard state", m.State)
	}
	if !nameOK.MatchString(p.Experiment) || !dirNameOK(p.Experiment) {
		return bad("plan.experiment", "%q: an experiment's name uses letters, digits, '.', '_', '=', '-' (it names the output directory)", p.Experiment)
	}
	if p.Seeds < 1 || p.Seeds > MaxSeeds {
		return bad("plan.seeds", "must be 1..%d, got %d", MaxSeeds, p.Seeds)
	}
	if len(p.Variants) > MaxVariants {
		return bad("plan.variants", "%d variants, more than the %d of an experiment", len(p.Variants), MaxVariants)
	}
	if a := p.Analysis; a != nil && a.Type != NodeToNode && a.Type != EndToEnd && a.Type != Coverage {
		return bad("plan.analysis.type", "must be %s, %s or %s, got %q", NodeToNode, EndToEnd, Coverage, a.Type)
	}
	names := make(map[string]bool, len(p.Variants))
	refs := map[string]bool{}
	for i, v := range p.Variants {
		switch {
		case !dirNameOK(v.Name):
			return bad(fmt.Sprintf("plan.variants[%d].name", i), "%q cannot name a directory", v.Name)
		case names[v.Name]:
			return bad(fmt.Sprintf("plan.variants[%d].name", i), "%q twice", v.Name)
		case !json.Valid([]byte(v.Config)):
			return bad(fmt.Sprintf("plan.variants[%d].config", i), "not a configuration (JSON)")
		case v.Reference != "" && !runKeyOK.MatchString(v.Reference):
			return bad(fmt.Sprintf("plan.variants[%d].reference", i), "%q is not a run key", v.Reference)
		}
		names[v.Name] = true
		if v.Reference != "" {
			refs[v.Reference] = true
		}
	}
	if len(m.Runs) > len(p.Variants)*p.Seeds {
		return bad("runs", "%d runs, more than the plan's %d", len(m.Runs), len(p.Variants)*p.Seeds)
	}
	for i, r := range m.Runs {
		if !names[r.Variant] || r.Seed < 1 || r.Seed > p.Seeds || !runKeyOK.MatchString(r.Key) {
			return bad(fmt.Sprintf("runs[%d]", i), "%q seed %d (key %q) is not a run of the plan", r.Variant, r.Seed, r.Key)
		}
	}
	if len(m.References) > len(refs) {
		return bad("references", "%d references, more than the plan's %d", len(m.References), len(refs))
	}
	for i, k := range m.References {
		if !refs[k] {
			return bad(fmt.Sprintf("references[%d]", i), "%q is not a reference of the plan", k)
		}
	}
	return nil
}
