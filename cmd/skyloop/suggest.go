package main

import (
	"sort"
	"strings"

	"skyloop/scenarios"
)

// didYouMean returns ` (did you mean "a" or "b"?)`-style advice naming the
// candidates nearest to name, or "" when none is near. A candidate is near
// when its edit distance to name (case ignored, a ".yaml" suffix and a
// directory prefix such as "netbots/" optional) is at most a third of
// name's length, and at least 2 edits, or when one contains the other or
// they share a prefix of at least 4 letters and half of name; only those
// within one edit of the nearest are named.
func didYouMean(name string, candidates []string) string {
	near := nearest(name, candidates, 3)
	if len(near) == 0 {
		return ""
	}
	q := make([]string, len(near))
	for i, n := range near {
		q[i] = `"` + n + `"`
	}
	return "; did you mean " + strings.Join(q, " or ") + "?"
}

// nearest returns up to max candidates near name, nearest first (ties in
// the candidates' order).
func nearest(name string, candidates []string, max int) []string {
	key := func(s string) string { return strings.ToLower(strings.TrimSuffix(s, ".yaml")) }
	n := key(name)
	type scored struct {
		name string
		d    int
	}
	var found []scored
	limit := len([]rune(n)) / 3
	if limit < 2 {
		limit = 2
	}
	for _, c := range candidates {
		k := key(c)
		d := editDistance(n, k)
		if _, base, ok := strings.Cut(k, "/"); ok {
			d = min(d, editDistance(n, base))
		}
		if len(n) >= 3 && (strings.Contains(k, n) || strings.Contains(n, k)) {
			d = min(d, limit)
		}
		if p := commonPrefix(n, k); p >= 4 && 2*p >= len(n) {
			d = min(d, limit)
		}
		if d <= limit {
			found = append(found, scored{c, d})
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].d < found[j].d })
	var out []string
	for _, f := range found[:min(max, len(found))] {
		if f.d <= found[0].d+1 { // the nearest, and those almost as near
			out = append(out, f.name)
		}
	}
	return out
}

// commonPrefix returns the length in bytes of a and b's common prefix.
func commonPrefix(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// editDistance is the Damerau-Levenshtein (optimal string alignment)
// distance between a and b: insertions, deletions, substitutions and
// swaps of neighbours, the usual typos.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// builtinScenarioNames is every name skyloop run takes for a built-in
// scenario: the top-level ones and the experiments' base scenarios.
func builtinScenarioNames() []string {
	names := append([]string(nil), scenarios.Names()...)
	for _, c := range scenarios.Collections() {
		names = append(names, scenarios.CollectionScenarios(c)...)
	}
	return names
}
