package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/internal/mjtest"
	"skyloop/scenarios"
	"skyloop/vehicle/mujoco"
)

// mujocoPlatoon returns the netbots study's platoon scenario with the robots in
// MuJoCo.
func mujocoPlatoon(t *testing.T) string {
	t.Helper()
	mjtest.Require(t)
	text, ok := scenarios.Lookup("netbots/platoon")
	if !ok {
		t.Fatal("netbots/platoon is not embedded")
	}
	out := strings.Replace(string(text), "    kind: groundbot\n", "    kind: groundbot\n    params: {physics: mujoco}\n", 1)
	if out == string(text) {
		t.Fatal("the platoon scenario has no groundbot group")
	}
	return out
}

// TestPlatoonOnMuJoCo: the platoon runs with MuJoCo physics, the classic
// robot's and the netbots paper's (its preset, track and controller), and
// gives the same kinds of figures; robots.csv is identical for the same
// seed, with one worker or two.
func TestPlatoonOnMuJoCo(t *testing.T) {
	t.Run("classic", func(t *testing.T) { platoonOnMuJoCo(t, mujocoPlatoon(t)) })
	t.Run("paper", func(t *testing.T) { platoonOnMuJoCo(t, platoonScenario(t, "netbots/paper")) })
}

// platoonOnMuJoCo is TestPlatoonOnMuJoCo on one scenario.
func platoonOnMuJoCo(t *testing.T, text string) {
	base := t.TempDir()
	var ref []byte
	for i, w := range []int{1, 2} {
		dir := filepath.Join(base, strconv.Itoa(i))
		s := runYAML(t, text, engine.Options{Registry: registry, Workers: w}, dir).Summary
		pr, ok := s.Measures["platoon"]
		if !ok {
			t.Fatalf("no platoon measure: %v", s.Measures)
		}
		if st := s.Network.ByKind["state"]; st.PDR != 1 || st.Tx == 0 {
			t.Errorf("state PDR %v over %d updates", st.PDR, st.Tx)
		}
		var dist float64
		for _, v := range s.Vehicles {
			dist += v.DistanceM
		}
		t.Logf("workers %d: %v; %.1f m driven; closest %.2f m", w, pr, dist, s.Separation.MinM)
		if dist < 80 || s.Separation.Collisions != 0 {
			t.Errorf("the robots drove %.1f m with %d collisions: the platoon did not run", dist, s.Separation.Collisions)
		}
		b, err := os.ReadFile(filepath.Join(dir, "robots.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			ref = b
		} else if !bytes.Equal(b, ref) {
			t.Error("robots.csv differs between 1 and 2 workers")
		}
	}
	again := filepath.Join(base, "again")
	runYAML(t, text, engine.Options{Registry: registry, Workers: 1}, again)
	if b, _ := os.ReadFile(filepath.Join(again, "robots.csv")); !bytes.Equal(b, ref) {
		t.Error("the same seed gave another robots.csv")
	}
}

// rssKiB returns the process's resident memory.
func rssKiB(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("skipped: no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.Atoi(f[1])
	return pages * os.Getpagesize() / 1024
}

// TestMuJoCoMemoryFlat: 200 MuJoCo runs in one process free their worlds:
// every run closes all the MuJoCo models it loaded (mujoco.LiveModels),
// and the resident memory after the last is within 100 MB of that after
// the 20th (a leaked world of 3 robots, a model each, holds about 6 MB, so
// 180 of them add 1 GB).
func TestMuJoCoMemoryFlat(t *testing.T) {
	text := strings.Replace(mujocoPlatoon(t), "duration: 60s", "duration: 200ms", 1)
	opt := engine.Options{Registry: registry, Workers: 1, NoFiles: true}
	var after20 int
	live := mujoco.LiveModels()
	for i := 1; i <= 200; i++ {
		r := buildYAML(t, text, opt)
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
		if err := r.Run(); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Finish(); err != nil {
			t.Fatal(err)
		}
		if n := mujoco.LiveModels(); n != live {
			t.Fatalf("run %d left %d MuJoCo models open", i, n-live)
		}
		if i == 20 {
			after20 = rssKiB(t)
		}
	}
	end := rssKiB(t)
	t.Logf("resident memory after 20 runs %d KiB, after 200 %d KiB", after20, end)
	// Every model is closed (checked above); the resident size still
	// moves in steps of a few MB as the C allocator keeps freed MuJoCo
	// buffers (each robot's model is about 2 MB), by 5-39 MB here, so
	// the bound is on growth a leak would show, not on the allocator.
	if end-after20 > 100*1024 {
		t.Errorf("memory grew %d KiB over 180 runs", end-after20)
	}
}
