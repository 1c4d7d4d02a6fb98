package sweep

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"skyloop/internal/untrusted"
	"skyloop/record"
)

// MergeOptions adjust Merge.
type MergeOptions struct {
	// Out is the root directory the merged experiments go to
	// (Out/<experiment>). "" merges each experiment in place, which needs
	// all of its shards in one directory (a shared file system).
	Out string
}

// MergeResult is one merged experiment.
type MergeResult struct {
	Experiment string
	Dir        string // the merged experiment directory
	Shards     int    // N
	// Sources are the shard directories the runs came from.
	Sources          []string
	Runs, References int
	// Placed is how many runs and references were linked (or copied)
	// into Dir; the others were there already.
	Placed int
	Rows   int
}

// MissingRun is a run or reference that no shard directory holds
// finished.
type MissingRun struct {
	Name  string // "<variant> seed <k>" or "reference/<key>"
	Key   string // the run's key (meta.json)
	Shard Shard  // the shard that runs it
	// Why is what the shard's manifest says, or that there is none.
	Why string
	// Command is the shard's command line, from its manifest (nil if
	// unknown).
	Command []string
}

// IncompleteError is returned by Merge when runs are missing: nothing of
// the experiment was merged.
type IncompleteError struct {
	Experiment string
	Total      int // runs and references the sweep has
	Missing    []MissingRun
}

// Error names every missing run (up to a few per shard), grouped by the
// shard that runs it, and how to finish it.
func (e *IncompleteError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d runs and references are missing, so nothing was merged (no partial summary):", e.Experiment, len(e.Missing), e.Total)
	byShard := map[int][]MissingRun{}
	for _, m := range e.Missing {
		byShard[m.Shard.Index] = append(byShard[m.Shard.Index], m)
	}
	shards := slices.Sorted(maps.Keys(byShard))
	for i, k := range shards {
		if i == maxShardsListed && len(shards) > maxShardsListed+1 {
			fmt.Fprintf(&b, "\n  ... and %d more shards", len(shards)-i)
			break
		}
		ms := byShard[k]
		fmt.Fprintf(&b, "\n  shard %s: %s", ms[0].Shard, ms[0].Why)
		if len(ms[0].Command) > 0 {
			fmt.Fprintf(&b, "; run it (again) with: %s", shellJoin(ms[0].Command))
		} else {
			fmt.Fprintf(&b, "; run it (again): skyloop sweep EXPERIMENT --shard %s with the other shards' arguments", ms[0].Shard)
		}
		for i, m := range ms {
			if i == 8 && len(ms) > 9 {
				fmt.Fprintf(&b, "\n    ... and %d more", len(ms)-i)
				break
			}
			fmt.Fprintf(&b, "\n    %s (key %s)", m.Name, m.Key)
		}
	}
	b.WriteString("\nfinished runs are kept and not run again; merge again once every shard has finished")
	return b.String()
}

// maxShardsListed is how many shards an IncompleteError names.
const maxShardsListed = 32

// ConflictError is returned by Merge when two shard directories hold the
// same run (the same key) with different files: runs are deterministic, so
// one of them is not what it claims to be.
type ConflictError struct {
	Experiment string
	Run        string   // "<variant> seed <k>" or "reference/<key>"
	A, B       string   // the two run directories
	Files      []string // the files that differ or are in one only
}

// Error names the run, the two directories and the files that differ.
func (e *ConflictError) Error() string {
	files := e.Files
	more := ""
	if len(files) > 5 {
		files, more = files[:5], fmt.Sprintf(" and %d more", len(e.Files)-5)
	}
	return fmt.Sprintf("%s: %s is in %s and in %s with different files (%s%s): runs with the same key should be identical; "+
		"remove the one that is wrong (or both, and run its shard again) and merge again", e.Experiment, e.Run, e.A, e.B, strings.Join(files, ", "), more)
}

// shardSource is a shard's manifest and the experiment directory it is in.
type shardSource struct {
	dir  string
	file string
	m    *manifest
	// plan identifies the manifest's plan (a hash of it): the plan itself
	// is kept of the first manifest of an experiment only.
	plan [sha256.Size]byte
}

// Merge puts together the shards of sweeps (skyloop sweep --shard K/N):
// dirs are shard output directories (the --out of the shards, or
// experiment directories in them), holding shard-K-of-N.json manifests.
// For every experiment found, it checks that every run and reference of
// the sweep is finished in one of them (else an *IncompleteError naming
// the missing ones and their shards, and nothing is merged), that runs
// found twice are identical (else a *ConflictError), links or copies the
// runs into Out/<experiment> (or leaves them in place without Out), and
// writes summary.csv, meta.json, the figures, the analysis and
// report.html: byte for byte what a single sweep of the experiment writes.
// Experiments are merged independently; the errors of all come back
// joined.
func Merge(dirs []string, opt MergeOptions) ([]*MergeResult, error) {
	if len(dirs) == 0 {
		return nil, &OptionError{errors.New("merge needs at least one shard directory")}
	}
	groups := map[string][]shardSource{}
	for _, d := range dirs {
		st, err := os.Stat(d)
		if err != nil {
			return nil, &OptionError{fmt.Errorf("shard directory %w", err)}
		}
		if !st.IsDir() {
			return nil, &OptionError{fmt.Errorf("%s is not a directory: give the shards' --out directories (or experiment directories in them)", d)}
		}
		files := manifestFiles(d)
		if len(files) == 0 {
			files = manifestFiles(filepath.Join(d, "*"))
		}
		if len(files) == 0 {
			return nil, &OptionError{fmt.Errorf("%s: no shard manifest (shard-K-of-N.json) here or one level down: give the --out directories of skyloop sweep --shard, or experiment directories in them", d)}
		}
		for _, f := range files {
			m, err := readManifest(f)
			if err != nil {
				return nil, err
			}
			pj, err := json.Marshal(m.Plan)
			if err != nil {
				return nil, &ManifestError{File: f, Field: "plan", Err: err}
			}
			src := shardSource{dir: filepath.Dir(f), file: f, m: m, plan: sha256.Sum256(pj)}
			if g := groups[m.Plan.Experiment]; len(g) > 0 && g[0].plan == src.plan {
				m.Plan = g[0].m.Plan // one copy of a plan, however many shards
			}
			groups[m.Plan.Experiment] = append(groups[m.Plan.Experiment], src)
		}
	}
	var out []*MergeResult
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		r, err := mergeOne(name, groups[name], opt)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// manifestFiles lists the shard manifests matching dir/shard-*-of-*.json
// (dir may hold a pattern), in order.
func manifestFiles(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "shard-*-of-*.json"))
	var out []string
	for _, f := range m {
		if manifestName.MatchString(filepath.Base(f)) {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// mergeItem is a run or reference of the sweep.
type mergeItem struct {
	name, rel, key string
	shard          int
	variant        string // "" for a reference
	seed           int
}

// mergeDest returns the directory an experiment is merged into, by its
// real path: with --out, OUT/<name> (OUT's links resolved; OUT/<name> must
// not be a link, the name was checked to be one directory's), else the one
// directory its shards are in. Every file the merge writes is inside it
// (noLinks keeps it so).
func mergeDest(name string, dirs []string, opt MergeOptions) (string, error) {
	var dest string
	switch {
	case opt.Out != "":
		if err := os.MkdirAll(opt.Out, 0o755); err != nil {
			return "", fmt.Errorf("creating %s: %w", opt.Out, err)
		}
		out, err := filepath.EvalSymlinks(opt.Out)
		if err != nil {
			return "", fmt.Errorf("--out %s: %w", opt.Out, err)
		}
		dest = filepath.Join(out, name)
		if filepath.Dir(dest) != out || filepath.Base(dest) != name {
			return "", fmt.Errorf("%s: not a name for a directory in %s", name, opt.Out)
		}
	case len(dirs) == 1:
		d, err := filepath.EvalSymlinks(dirs[0])
		if err != nil {
			return "", err
		}
		dest = d
	default:
		return "", &OptionError{fmt.Errorf("%s: the shards are in %d directories (%s): give --out DIR to merge them into DIR/%s",
			name, len(dirs), strings.Join(dirs, ", "), name)}
	}
	if st, err := os.Lstat(dest); err == nil && !st.IsDir() {
		return "", fmt.Errorf("%s exists and is not a directory (a link?): merge into a directory of its own", dest)
	}
	return dest, nil
}

// noLinks checks that the merge's destination has no symbolic link below
// it: the merge writes only there, and a link (from a shard's directory
// merged in place, or put there) would take a write elsewhere. skyloop
// writes none.
func noLinks(dest string) error {
	err := filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dest {
			return nil
		}
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link: a merge writes into %s and never through a link (skyloop writes none); remove it and merge again", p, dest)
		}
		return nil
	})
	return err
}

// realDirs reports whether rel (a run's directory) is a directory below
// base whose every part is a directory, no link: the runs merged are the
// shard directory's own.
func realDirs(base, rel string) bool {
	p := base
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		st, err := os.Lstat(p)
		if err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}

// agree checks that every manifest lists exactly the runs and references
// its plan gives its shard, with the plan's keys: a manifest that lists
// others was edited, or belongs to another plan.
func agree(srcs []shardSource, refItems, runItems []mergeItem) error {
	type want struct {
		runs map[string]string // "<variant>\x00<seed>" -> key
		refs map[string]bool
	}
	byShard := map[int]*want{}
	for _, s := range srcs {
		byShard[s.m.Shard] = &want{runs: map[string]string{}, refs: map[string]bool{}}
	}
	for _, it := range runItems {
		if w := byShard[it.shard]; w != nil {
			w.runs[it.variant+"\x00"+strconv.Itoa(it.seed)] = it.key
		}
	}
	for _, it := range refItems {
		if w := byShard[it.shard]; w != nil {
			w.refs[it.key] = true
		}
	}
	for _, s := range srcs {
		w := byShard[s.m.Shard]
		bad := func(field, format string, args ...any) error {
			return &ManifestError{File: s.file, Field: field, Err: fmt.Errorf(format, args...)}
		}
		seen := map[string]bool{}
		for i, r := range s.m.Runs {
			k := r.Variant + "\x00" + strconv.Itoa(r.Seed)
			key, ok := w.runs[k]
			switch {
			case !ok:
				return bad(fmt.Sprintf("runs[%d]", i), "%s seed %d is not a run of shard %s", r.Variant, r.Seed, Shard{s.m.Shard, s.m.Shards})
			case key != r.Key:
				return bad(fmt.Sprintf("runs[%d]", i), "%s seed %d has key %s, but its plan gives it %s", r.Variant, r.Seed, r.Key, key)
			case seen[k]:
				return bad(fmt.Sprintf("runs[%d]", i), "%s seed %d twice", r.Variant, r.Seed)
			}
			seen[k] = true
		}
		if len(seen) != len(w.runs) {
			return bad("runs", "%d runs, but its plan gives shard %s %d", len(seen), Shard{s.m.Shard, s.m.Shards}, len(w.runs))
		}
		refs := map[string]bool{}
		for i, k := range s.m.References {
			if !w.refs[k] || refs[k] {
				return bad(fmt.Sprintf("references[%d]", i), "%s is not a reference of shard %s, or is there twice", k, Shard{s.m.Shard, s.m.Shards})
			}
			refs[k] = true
		}
		if len(refs) != len(w.refs) {
			return bad("references", "%d references, but its plan gives shard %s %d", len(refs), Shard{s.m.Shard, s.m.Shards}, len(w.refs))
		}
	}
	return nil
}

func mergeOne(name string, srcs []shardSource, opt MergeOptions) (*MergeResult, error) {
	first := srcs[0]
	for _, s := range srcs[1:] {
		if s.m.Shards != first.m.Shards {
			return nil, fmt.Errorf("%s: %s is one of %d shards but %s one of %d: merge the shards of one split (the same N)",
				name, s.file, s.m.Shards, first.file, first.m.Shards)
		}
		if s.plan != first.plan {
			return nil, fmt.Errorf("%s: %s and %s were made with different experiment files or options (--seeds, --duration, --set, --backend, --no-files): run every shard with the same arguments",
				name, first.file, s.file)
		}
		if !maps.Equal(s.m.Versions, first.m.Versions) {
			return nil, fmt.Errorf("%s: %s and %s were made by different skyloop builds (%v and %v), whose runs may differ: run every shard with one build",
				name, first.file, s.file, first.m.Versions, s.m.Versions)
		}
	}
	n := first.m.Shards
	// The shard directories, each once, in the order given.
	var dirs []string
	for _, s := range srcs {
		if !slices.ContainsFunc(dirs, func(d string) bool { return sameDir(d, s.dir) }) {
			dirs = append(dirs, s.dir)
		}
	}
	manifests := map[int]*manifest{}
	for _, s := range srcs {
		if manifests[s.m.Shard] == nil {
			manifests[s.m.Shard] = s.m
		}
	}
	dest, err := mergeDest(name, dirs, opt)
	if err != nil {
		return nil, err
	}
	// The experiment directory is ours, as a sweep's: no sweep and no
	// other merge writes it meanwhile.
	lock, err := record.TryLock(dest)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	if err := noLinks(dest); err != nil {
		return nil, err
	}
	cands := dirs
	destIdx := slices.IndexFunc(dirs, func(d string) bool { return sameDir(d, dest) })
	if destIdx < 0 {
		if st, err := os.Stat(dest); err == nil && st.IsDir() {
			// An earlier merge's runs count as well.
			cands = append(slices.Clip(dirs), dest)
			destIdx = len(cands) - 1
		}
	}

	e, preps := first.m.Plan.experiment()
	seeds := first.m.Plan.Seeds
	var items []mergeItem
	seen := map[string]bool{}
	for _, p := range preps {
		if p.refKey == "" || seen[p.refKey] {
			continue
		}
		seen[p.refKey] = true
		items = append(items, mergeItem{name: "reference/" + p.refKey, rel: filepath.Join("reference", p.refKey), key: p.refKey,
			shard: shardOf(refShardKey(name, p.refKey), n)})
	}
	refs := len(items)
	for _, p := range preps {
		keys := runKeys(p.eff, seeds, first.m.Plan.NoFiles)
		for s := 1; s <= seeds; s++ {
			items = append(items, mergeItem{name: fmt.Sprintf("%s seed %d", p.v.Name, s), rel: filepath.Join(p.v.Name, fmt.Sprintf("seed%d", s)),
				key: keys[s-1], shard: shardOf(runShardKey(name, p.v.Name, s), n), variant: p.v.Name, seed: s})
		}
	}
	if err := agree(srcs, items[:refs], items[refs:]); err != nil {
		return nil, err
	}

	res := &MergeResult{Experiment: name, Dir: dest, Shards: n, Sources: dirs, Runs: len(items) - refs, References: refs}
	var missing []MissingRun
	var conflicts []error
	type move struct{ src, dst string }
	var moves []move
	for _, it := range items {
		var copies []string
		at := false // a copy is at the destination already
		for i, c := range cands {
			p := filepath.Join(c, it.rel)
			if realDirs(c, it.rel) && finished(p, it.key) {
				copies = append(copies, p)
				at = at || i == destIdx
			}
		}
		if len(copies) == 0 {
			missing = append(missing, missingRun(it, n, manifests, cands))
			continue
		}
		for _, o := range copies[1:] {
			diff, err := diffRuns(copies[0], o)
			if err != nil {
				return nil, fmt.Errorf("%s: comparing %s with %s: %w", name, copies[0], o, err)
			}
			if len(diff) > 0 {
				conflicts = append(conflicts, &ConflictError{Experiment: name, Run: it.name, A: copies[0], B: o, Files: diff})
			}
		}
		if !at {
			moves = append(moves, move{copies[0], filepath.Join(dest, it.rel)})
		}
	}
	if len(missing) > 0 {
		return nil, &IncompleteError{Experiment: name, Total: len(items), Missing: missing}
	}
	if len(conflicts) > 0 {
		return nil, errors.Join(conflicts...)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dest, err)
	}
	for _, m := range moves {
		if err := placeRun(m.src, m.dst); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	res.Placed = len(moves)
	for _, it := range items[refs:] {
		completeRun(filepath.Join(dest, it.rel), first.m.Plan.NoFiles)
	}
	rows, err := writeSummary(dest, e, preps, seeds)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	res.Rows = rows
	if err := sweepFiles(dest, e, preps, seeds, first.m.Versions); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return res, nil
}

// missingRun describes a missing run with what its shard's manifest says.
func missingRun(it mergeItem, n int, manifests map[int]*manifest, cands []string) MissingRun {
	mr := MissingRun{Name: it.name, Key: it.key, Shard: Shard{it.shard, n}}
	m := manifests[it.shard]
	switch {
	case m == nil:
		mr.Why = fmt.Sprintf("no %s in the directories given (the shard has not started, or its directory was not given)", mr.Shard.file())
	case m.State == stateRunning:
		mr.Why = "its manifest says running: it is still going, or it was killed"
	case m.State == stateStopped:
		mr.Why = "it was stopped before it finished"
	case m.State == stateFailed:
		mr.Why = "it failed: " + m.Error
	default:
		mr.Why = "its manifest says done, yet the runs below are not in the directories given (moved or deleted?)"
	}
	if m != nil {
		mr.Command = m.Command
	} else {
		// Another shard's command line, for this shard.
		for _, k := range slices.Sorted(maps.Keys(manifests)) {
			if c := withShard(manifests[k].Command, mr.Shard); c != nil {
				mr.Command = c
				break
			}
		}
	}
	for _, c := range cands {
		if inc := filepath.Join(c, it.rel) + ".incomplete"; fileExists(filepath.Join(inc, "ERROR.txt")) {
			mr.Name += " (partial files and the error in " + inc + ")"
			break
		}
	}
	return mr
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// sameDir reports whether a and b are the same directory.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// diffRuns lists the files (relative paths) that differ between two run
// directories or are in one only.
func diffRuns(a, b string) ([]string, error) {
	fa, err := runFiles(a)
	if err != nil {
		return nil, err
	}
	fb, err := runFiles(b)
	if err != nil {
		return nil, err
	}
	var diff []string
	for rel, ia := range fa {
		ib, ok := fb[rel]
		if !ok && rel == "report.html" {
			continue // not written: the shard was killed just after the run (see completeRun)
		}
		if !ok {
			diff = append(diff, rel+" (only in "+a+")")
			continue
		}
		same, err := sameFile(filepath.Join(a, rel), filepath.Join(b, rel), ia, ib)
		if err != nil {
			return nil, err
		}
		if !same {
			diff = append(diff, rel)
		}
	}
	for rel := range fb {
		if _, ok := fa[rel]; !ok && rel != "report.html" {
			diff = append(diff, rel+" (only in "+b+")")
		}
	}
	sort.Strings(diff)
	return diff, nil
}

// runFiles lists the files and links in a run directory.
func runFiles(dir string) (map[string]fs.FileInfo, error) {
	out := map[string]fs.FileInfo{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel != ".report.html.tmp" { // the runner's temporary, if it died writing it
			out[filepath.ToSlash(rel)] = info
		}
		return nil
	})
	return out, err
}

// sameFile compares two files (or links) by content.
func sameFile(a, b string, ia, ib fs.FileInfo) (bool, error) {
	if os.SameFile(ia, ib) {
		return true, nil
	}
	if ia.Mode().Type() != ib.Mode().Type() {
		return false, nil
	}
	if ia.Mode()&fs.ModeSymlink != 0 {
		la, err1 := os.Readlink(a)
		lb, err2 := os.Readlink(b)
		return la == lb, errors.Join(err1, err2)
	}
	if !ia.Mode().IsRegular() {
		return true, nil // a socket or a pipe: of the same type, as far as a run goes
	}
	if ia.Size() != ib.Size() {
		return false, nil
	}
	f, err := untrusted.Open(a, math.MaxInt64)
	if err != nil {
		return false, err
	}
	defer f.Close()
	g, err := untrusted.Open(b, math.MaxInt64)
	if err != nil {
		return false, err
	}
	defer g.Close()
	ba, bb := make([]byte, 1<<16), make([]byte, 1<<16)
	for {
		na, ea := io.ReadFull(f, ba)
		nb, eb := io.ReadFull(g, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		if ea == io.EOF || ea == io.ErrUnexpectedEOF {
			return eb == io.EOF || eb == io.ErrUnexpectedEOF, nil
		}
		if ea != nil {
			return false, ea
		}
		if eb != nil {
			return false, eb
		}
	}
}

// mergeTmp is the prefix of the temporary directory a run is assembled in
// next to its destination; record.Create removes those left by a merge
// that died, as it does its own (".<run>.tmp-").
const mergeTmp = ".tmp-merge-"

// placeRun puts the finished run src at dst: its files hard-linked (runs
// are never changed once written) or, across file systems, copied, into a
// temporary directory that is then renamed into place, so that dst is
// always a complete run or none. A run directory at dst (of another
// configuration: a finished one of this key is never replaced) is
// replaced; anything else there is an error.
func placeRun(src, dst string) error {
	parent, base := filepath.Split(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", parent, err)
	}
	lock, err := record.TryLock(dst)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	old, err := os.Lstat(dst)
	exists := err == nil
	if exists {
		if !old.IsDir() || !fileExists(filepath.Join(dst, record.Marker)) && !emptyDir(dst) {
			return fmt.Errorf("%s exists and is not a skyloop run directory: remove it or merge into another directory", dst)
		}
	}
	// Temporaries of a merge that died here.
	if stale, _ := filepath.Glob(filepath.Join(parent, "."+base+mergeTmp+"*")); len(stale) > 0 {
		for _, s := range stale {
			if fileExists(filepath.Join(s, record.Marker)) || emptyDir(s) {
				os.RemoveAll(s)
			}
		}
	}
	tmp, err := os.MkdirTemp(parent, "."+base+mergeTmp)
	if err != nil {
		return fmt.Errorf("placing %s: %w", dst, err)
	}
	if err := copyRun(src, tmp); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("placing %s into %s: %w", src, dst, err)
	}
	if exists {
		if err := os.Rename(dst, tmp+".old"); err != nil {
			os.RemoveAll(tmp)
			return fmt.Errorf("replacing %s: %w", dst, err)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		if exists {
			os.Rename(tmp+".old", dst)
		}
		os.RemoveAll(tmp)
		return fmt.Errorf("placing %s: %w", dst, err)
	}
	if exists {
		if err := os.RemoveAll(tmp + ".old"); err != nil {
			return fmt.Errorf("removing the previous run at %s: %w", dst, err)
		}
	}
	return nil
}

func emptyDir(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err == nil && len(ents) == 0
}

// copyRun fills the empty directory dst with src's files: the marker
// first, so that a directory left half-filled is known to be ours.
func copyRun(src, dst string) error {
	marker := filepath.Join(src, record.Marker)
	if st, err := os.Lstat(marker); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (a link?): not a skyloop run", marker)
	}
	if err := linkOrCopy(marker, filepath.Join(dst, record.Marker)); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." || rel == record.Marker || rel == ".report.html.tmp" {
			return nil
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link: a skyloop run has none, and a merge copies none", p)
		case d.Type().IsRegular():
			return linkOrCopy(p, to)
		}
		return nil // sockets, pipes: not part of a run
	})
}

// link makes hard links (a variable for the tests of the copy).
var link = os.Link

// linkOrCopy hard-links src at dst, or copies it where links cannot be
// made (another file system).
func linkOrCopy(src, dst string) error {
	if link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// shellJoin writes a command line for a shell, quoting where needed.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// withShard returns a shard's command line changed to run shard sh (nil
// if it has no --shard argument).
func withShard(cmd []string, sh Shard) []string {
	out := slices.Clone(cmd)
	for i, a := range out {
		switch {
		case a == "--shard" && i+1 < len(out):
			out[i+1] = sh.String()
			return out
		case strings.HasPrefix(a, "--shard="):
			out[i] = "--shard=" + sh.String()
			return out
		}
	}
	return nil
}
