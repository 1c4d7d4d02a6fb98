package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sampleMarker precedes a code block of README.md or docs/guide.md that shows a command's output:
// <!-- sample: run quickstart --twin --> (the skyloop arguments). The block
// may start with the "$ skyloop ..." line and may leave lines out with
// "..." lines.
var sampleMarker = regexp.MustCompile("(?m)^<!-- sample: (.+?) -->\n```\n((?s:.*?))```")

// wallClock matches what differs between two identical runs: the wall
// time and the speed, and the results directory.
var wallClock = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`in [0-9.]+m?s \([0-9.]+x real time\)`), "in Ts (Nx real time)"},
	{regexp.MustCompile(`(?m)^results: .*$`), "results: DIR"},
}

func normalize(s string) string {
	for _, w := range wallClock {
		s = w.re.ReplaceAllString(s, w.with)
	}
	return s
}

// TestReadmeSamplesAreTrue runs every command whose output README.md or
// docs/guide.md shows (after a sample marker) and checks that each line shown is one
// the command prints now, in the order shown (lines left out, as "..."
// marks, may come between; wall-clock time, speed and the results
// directory aside): the samples fail this test when
// the outputs drift, instead of going stale.
func TestReadmeSamplesAreTrue(t *testing.T) {
	var samples [][]string
	for _, f := range []string{"README.md", "docs/guide.md"} {
		text, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, sampleMarker.FindAllStringSubmatch(string(text), -1)...)
	}
	if len(samples) < 3 {
		t.Fatalf("README and docs/guide.md have %d sample markers, want the quickstart, twin and ubanc-chain outputs marked", len(samples))
	}
	for _, m := range samples {
		args := append(strings.Fields(m[1]), "--out", filepath.Join(t.TempDir(), "run"))
		code, stdout, stderr := capture(t, args...)
		if code != 0 {
			t.Errorf("skyloop %s: exit %d\n%s", m[1], code, stderr)
			continue
		}
		got := strings.Split(normalize(stdout), "\n")
		i := 0
		for _, want := range strings.Split(strings.TrimRight(m[2], "\n"), "\n") {
			if strings.TrimSpace(want) == "..." || strings.HasPrefix(want, "$ skyloop ") {
				continue
			}
			want = normalize(want)
			for i < len(got) && got[i] != want {
				i++
			}
			if i == len(got) {
				t.Errorf("README's output of skyloop %s shows\n  %s\nwhich it no longer prints (in that order); it prints:\n%s", m[1], want, stdout)
				break
			}
			i++
		}
	}
}
