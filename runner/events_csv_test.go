package runner

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"skyloop/internal/short"
	"skyloop/record"
	"skyloop/sim"
)

// TestEventsCSVSurvivesHostileText: event names and details come from
// agents (external processes among them); whatever they contain, events.csv
// keeps five columns per row and Go's and Python's csv readers read the
// text back.
func TestEventsCSVSurvivesHostileText(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "run")
	dir, err := record.CreateIn(record.OS, dest)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newEventsCSV(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := &outputs{}
	out.add(s)
	texts := []string{"a,b", `quote "x"`, "multi\nline", " lead", "plain"}
	for i, s := range texts {
		out.Event(sim.Time(i), 1, "extern", s, s+", detail")
	}
	if err := dir.Commit(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dest, "events.csv")
	f, _ := os.Open(path)
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != len(texts)+1 {
		t.Fatalf("Go read %d rows, %v", len(rows), err)
	}
	for i, s := range texts {
		if rows[i+1][3] != s || rows[i+1][4] != s+", detail" {
			t.Errorf("row %d: %q", i, rows[i+1])
		}
	}
	short.Skip(t, "needs python3")
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_PYTHON") != "" {
			t.Fatal("python3 required (SKYLOOP_REQUIRE_PYTHON) but not found")
		}
		t.Skip("python3 not found: Python's csv module not checked")
	}
	b, err := exec.Command(py, "-c", `import csv, json, sys
print(json.dumps([r[3:] for r in csv.reader(open(sys.argv[1], newline=''))][1:]))`, path).Output()
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	if err := json.Unmarshal(b, &got); err != nil || len(got) != len(texts) {
		t.Fatalf("Python read %q: %v", b, err)
	}
	for i, s := range texts {
		if got[i][0] != s || got[i][1] != s+", detail" {
			t.Errorf("row %d: Python read %q", i, got[i])
		}
	}
}
