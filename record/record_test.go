package record

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCommitIsAtomicAndReplaces(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "runs", "x", "seed1")
	for round := 0; round < 2; round++ {
		d, err := CreateIn(OS, dest)
		if err != nil {
			t.Fatal(err)
		}
		c, err := d.CSV("a.csv", "x,y,z")
		if err != nil {
			t.Fatal(err)
		}
		c.Int(int64(round)).Quoted("has, comma and \"quote\"").Str("").End()
		c.Float(1.5, 2).Uint(7).Str("w").End()
		if _, err := os.Stat(dest); round == 0 && !os.IsNotExist(err) {
			t.Fatal("destination visible before commit")
		}
		if err := d.JSON("s.json", map[string]int{"round": round}); err != nil {
			t.Fatal(err)
		}
		if err := d.Commit(); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(dest, "a.csv"))
		want := "x,y,z\n" + string(rune('0'+round)) + ",\"has, comma and \"\"quote\"\"\",\n1.50,7,w\n"
		if string(b) != want {
			t.Fatalf("round %d: a.csv = %q, want %q", round, b, want)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(dest))
	if len(ents) != 1 {
		t.Fatalf("leftovers next to the run: %v", ents)
	}
}

func TestAbortKeepsPartialFiles(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "seed1")
	d, _ := CreateIn(OS, dest)
	c, _ := d.CSV("trace.csv", "h")
	c.Str("row").End()
	kept := d.Abort(errors.New("backend crashed"))
	if kept != dest+".incomplete" {
		t.Fatalf("kept in %s", kept)
	}
	if b, _ := os.ReadFile(filepath.Join(kept, "ERROR.txt")); string(b) != "backend crashed\n" {
		t.Fatalf("ERROR.txt = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(kept, "trace.csv")); string(b) != "h\nrow\n" {
		t.Fatalf("partial trace lost: %q", b)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatal("an aborted run appeared at the destination")
	}
}

func TestNeverReplacesForeignDirectories(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "precious")
	os.Mkdir(precious, 0o755)
	os.WriteFile(filepath.Join(precious, "thesis.tex"), []byte("x"), 0o644)
	if _, err := CreateIn(OS, precious); !errors.Is(err, ErrNotRunDir) {
		t.Fatalf("Create over a foreign directory: %v", err)
	}
	file := filepath.Join(dir, "afile")
	os.WriteFile(file, []byte("x"), 0o644)
	if _, err := CreateIn(OS, file); !errors.Is(err, ErrNotRunDir) {
		t.Fatalf("Create over a file: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(precious, "thesis.tex")); string(b) != "x" {
		t.Fatal("foreign file touched")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("leftovers: %v", ents)
	}
}

// TestAsyncStreamsWriteTheSameBytes: streams written through the
// background writer (real-time runs) end up identical to direct ones.
func TestAsyncStreamsWriteTheSameBytes(t *testing.T) {
	write := func(async bool) (string, string) {
		dest := filepath.Join(t.TempDir(), "run")
		d, err := CreateIn(OS, dest)
		if err != nil {
			t.Fatal(err)
		}
		if async {
			d.SetAsync()
		}
		c, _ := d.CSV("a.csv", "i,v")
		f, _ := d.File("sub/b.bin")
		for i := 0; i < 200000; i++ { // several MB: many 64 KiB chunks
			c.Int(int64(i)).Float(float64(i)/7, 3).End()
			f.Write([]byte{byte(i), byte(i >> 8)})
		}
		if err := d.Commit(); err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(filepath.Join(dest, "a.csv"))
		b, _ := os.ReadFile(filepath.Join(dest, "sub", "b.bin"))
		return string(a), string(b)
	}
	a1, b1 := write(false)
	a2, b2 := write(true)
	if len(a1) < 1<<20 || a1 != a2 || b1 != b2 {
		t.Fatalf("async output differs: csv %d vs %d bytes, bin %d vs %d bytes", len(a1), len(a2), len(b1), len(b2))
	}
}
