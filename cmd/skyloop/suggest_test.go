package main

import (
	"strings"
	"testing"
)

// TestDidYouMean checks that a mistyped scenario or experiment name is
// answered with the nearest built-in names (exit 2), and a name near none
// with the list.
func TestDidYouMean(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "quickstrat"}, `no built-in scenario of that name; did you mean "quickstart"?`},
		{[]string{"run", "ubanc-chian"}, `did you mean "ubanc-chain"?`},
		{[]string{"run", "Munils-50"}, `did you mean "munils-50"`},
		{[]string{"run", "flocking"}, `did you mean "flock-10" or "flock-100"?`},
		{[]string{"run", "netbots/platon"}, `did you mean "netbots/platoon"`},
		{[]string{"validate", "quickstart.yml"}, `did you mean "quickstart"?`},
		{[]string{"sweep", "netbots/dealy"}, `did you mean "netbots/delay"?`},
		{[]string{"sweep", "ubanc-"}, `did you mean "ubanc"`},
		{[]string{"run", "xyzzy"}, "no built-in scenario of that name (built-in: bench-full100, "},
	}
	for _, c := range cases {
		code, _, stderr := capture(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
	if strings.Contains(didYouMean("xyzzy", builtinScenarioNames()), "did you mean") {
		t.Errorf("xyzzy is near nothing, got %q", didYouMean("xyzzy", builtinScenarioNames()))
	}
	for _, c := range []struct {
		a, b string
		d    int
	}{{"quickstrat", "quickstart", 1}, {"kitten", "sitting", 3}, {"", "abc", 3}, {"abc", "abc", 0}} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
