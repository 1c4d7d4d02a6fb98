package fileerr

import (
	"strings"
	"testing"
)

// TestList: problems come back in line order, paths at one line with
// their indexes in numeric order, at most max of them and a line counting
// the rest.
func TestList(t *testing.T) {
	es := Errors{
		{File: "s.yaml", Line: 9, Path: "b", Msg: "last"},
		{File: "s.yaml", Line: 3, Path: "v[10].x", Msg: "ten"},
		{File: "s.yaml", Line: 3, Path: "v[2].x", Msg: "two"},
		{File: "s.yaml", Line: 1, Path: "", Msg: "first"},
	}
	err := List(es, "s.yaml", 10, false)
	want := "s.yaml:1: first\ns.yaml:3: v[2].x: two\ns.yaml:3: v[10].x: ten\ns.yaml:9: b: last"
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
	if es[0].Msg != "last" {
		t.Error("List reordered its argument")
	}
	err = List(es, "s.yaml", 2, true)
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || lines[2] != "s.yaml: ... and more than 2 more problems (the first 2 are listed)" {
		t.Errorf("limited to 2: %q", lines)
	}
	if List(nil, "s.yaml", 10, false) != nil {
		t.Error("no problems: want a nil error")
	}
}
