package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestViewRefusesHostileRunDirectories: skyloop view checks a run
// directory before it serves anything, and says which file and line is
// wrong (exit 2). On fc3ddb2 a trace.csv src of 2^32 was served (as
// -2147483648) and a vehicles.csv linked to /dev/zero was read without
// end.
func TestViewRefusesHostileRunDirectories(t *testing.T) {
	write := func(trace string, link bool) string {
		dir := t.TempDir()
		files := map[string]string{
			"summary.json": `{"scenario":"tiny","seed":1,"duration_ns":10000000000,"nodes":2,"vehicles":[{"name":"a"},{"name":"b"}]}`,
			"vehicles.csv": "t_ns,id,x,y,z,vx,vy,vz,roll,pitch,yaw,mode,armed,energy_j,battery_v\n0,0,0,0,0,0,0,0,0,0,0,hold,0,0,12\n",
			"trace.csv":    "event,t_ns,src,dst,seq,t_gen_ns\n" + trace,
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if link {
			os.Remove(filepath.Join(dir, "vehicles.csv"))
			if err := os.Symlink("/dev/zero", filepath.Join(dir, "vehicles.csv")); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	cases := []struct {
		dir, want string
	}{
		{write("rx,1000,4294967296,1,0,0\n", false), `trace.csv line 2: src "4294967296" is not a node of the run (0 to 1)`},
		{write("rx,1000,0,1,0,0\n", true), "vehicles.csv is a symbolic link to /dev/zero: refused"},
		{filepath.Join(t.TempDir(), "none"), "is not a finished run directory"},
	}
	for _, c := range cases {
		code, _, stderr := capture(t, "view", c.dir, "--serve", "127.0.0.1:0")
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("view %s: exit %d, stderr %q; want 2 and %q", c.dir, code, stderr, c.want)
		}
	}
}
