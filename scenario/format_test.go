package scenario_test

import (
	"errors"
	"testing"

	"skyloop/scenario"
)

// TestOutputsFormat: outputs.format is one of scenario.Formats; any other
// value is refused with an error naming the key, the line and the bad
// value, and the empty format is CSV.
func TestOutputsFormat(t *testing.T) {
	const head = "name: t\nvehicles: [{name: d, kind: pointmass, count: 1, spawn: {layout: line, spacing: 1}}]\noutputs: {format: "
	for _, f := range scenario.Formats {
		sc, err := scenario.Parse("ok.yaml", []byte(head+string(f)+"}\n"))
		if err != nil {
			t.Fatalf("format %s: %v", f, err)
		}
		if sc.Outputs.Format != f {
			t.Errorf("format %s: decoded as %q", f, sc.Outputs.Format)
		}
	}
	_, err := scenario.Parse("bad.yaml", []byte(head+"xlsx}\n"))
	var es scenario.Errors
	if !errors.As(err, &es) || len(es) != 1 {
		t.Fatalf("got %v, want one problem", err)
	}
	if want := `bad.yaml:3: outputs.format: must be csv or parquet, got "xlsx"`; es[0].Error() != want {
		t.Errorf("got %q, want %q", es[0].Error(), want)
	}
	if scenario.Format("").Or(scenario.CSV) != scenario.CSV || scenario.Parquet.Or(scenario.CSV) != scenario.Parquet {
		t.Error("Or: the empty format is not the default, or a set one is replaced")
	}
}
