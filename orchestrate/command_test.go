package orchestrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "data.txt"), []byte("x"), 0o644)
	good := []string{
		"sh -c 'echo hi'",
		"exec sh -c true",
		"FOO=1 BAR=2 sh -c true",
		"env -i sh -c true",
		"./run.sh --id 3",
		"$HOME/bin/thing",
		"echo hello",
		"if true; then sh; fi",
		"nice -n 5 sh -c true",
		"timeout 30s sh -c true",
		"chrt -f 10 sh",
		"taskset 0x3 sh",
	}
	for _, c := range good {
		if err := CheckCommand(c, dir); err != nil {
			t.Errorf("%q: %v", c, err)
		}
	}
	bad := map[string]string{
		"pyhton3 flock.py":       "pyhton3: command not found in PATH",
		"exec no-such-prog-x":    "no-such-prog-x: command not found",
		"FOO=1 no-such-prog-y a": "no-such-prog-y: command not found",
		"./missing.sh":           "./missing.sh: no such program",
		"./data.txt":             "./data.txt: not an executable file",
		"nice -n 5 no-such-z":    "no-such-z: command not found",
		"timeout 10 nosuch-w x":  "nosuch-w: command not found",
	}
	for c, want := range bad {
		err := CheckCommand(c, dir)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", c, err, want)
		}
	}
}
