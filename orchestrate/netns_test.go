package orchestrate

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/internal/nstest"
)

// needRoot skips (or fails under SKYLOOP_REQUIRE_NETNS) without the
// privileges namespaces need.
func needRoot(t *testing.T) {
	t.Helper()
	nstest.Need(t, CheckPrivileges, "ip")
}

func ipIn(t *testing.T, ns string, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns, "ip"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %v in %s: %v: %s", args, ns, err, out)
	}
	return string(out)
}

// testPrefix returns a namespace prefix unique to this test process, so
// that test processes running at once (other packages, other checkouts)
// never share namespaces.
func testPrefix(what string) string {
	return fmt.Sprintf("sl-t%d-%s", os.Getpid(), what)
}

func TestUpDownLayout(t *testing.T) {
	needRoot(t)
	prefix := testPrefix("layout")
	nt, err := Up(prefix, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	defer nt.Down()
	names, _ := Namespaces(prefix)
	if len(names) != 3 {
		t.Fatalf("namespaces %v", names)
	}
	a := ipIn(t, prefix+"-1", "-o", "addr")
	for _, want := range []string{"lo", "inet 10.0.0.2/24", "wifi_tap", "inet 10.100.1.2/24", "host_veth"} {
		if !strings.Contains(a, want) {
			t.Errorf("namespace 1 lacks %q:\n%s", want, a)
		}
	}
	r := ipIn(t, prefix+"-1", "route")
	if strings.Contains(r, "default") || !strings.Contains(r, "10.0.0.0/24 dev wifi_tap") || !strings.Contains(r, "10.100.1.0/24 dev host_veth") {
		t.Errorf("routes in namespace 1:\n%s", r)
	}
	// No route to another vehicle's host link: only the TAP leads out.
	if out, err := exec.Command("ip", "netns", "exec", prefix+"-1", "ip", "route", "get", "10.100.2.2").CombinedOutput(); err == nil {
		t.Errorf("namespace 1 has a route to vehicle 2's host link: %s", out)
	}
	n := ipIn(t, prefix+"-0", "neigh")
	if !strings.Contains(n, "10.0.0.3 dev wifi_tap lladdr 02:53:4c:00:00:03 PERMANENT") {
		t.Errorf("static neighbours in namespace 0:\n%s", n)
	}
	// Up again with the same prefix from the same process: leftovers are
	// replaced, not duplicated.
	nt.Down()
	nt2, err := Up(prefix, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if names, _ := Namespaces(prefix); len(names) != 2 {
		t.Fatalf("after the second Up: %v", names)
	}
	if err := nt2.Down(); err != nil {
		t.Fatal(err)
	}
	if names, _ := Namespaces(prefix); len(names) != 0 {
		t.Fatalf("after Down: %v", names)
	}
}

func TestPrefixes(t *testing.T) {
	if p := Prefix("UBANC chain_5"); p != "sl-ubanc-chain-5" {
		t.Errorf("Prefix = %q", p)
	}
	// Long names that differ late keep apart.
	if a, b := Prefix("formation-experiment-alpha"), Prefix("formation-experiment-beta"); a == b || checkPrefix(a) != nil {
		t.Errorf("prefixes %q and %q", a, b)
	}
	if p := Prefix("a-name-much-longer-than-the-prefix-may-be"); len(p) < maxPrefix-1 || checkPrefix(p) != nil {
		t.Errorf("long name: prefix %q", p)
	}
	for _, bad := range []string{"x", "sl-", "sl-UPPER", "sl-a-prefix-far-too-long-for-the-limit", "netns-1"} {
		if checkPrefix(bad) == nil {
			t.Errorf("prefix %q accepted", bad)
		}
	}
	if ip, ok := NodeOfIP([4]byte{10, 0, 0, 7}); !ok || ip != 6 {
		t.Errorf("10.0.0.7 -> %d %v", ip, ok)
	}
	if _, ok := NodeOfIP([4]byte{10, 100, 0, 7}); ok {
		t.Error("10.100.0.7 mapped to a vehicle")
	}
}

// ipNetns runs ip netns with args and fails the test if it fails.
func ipNetns(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", append([]string{"netns"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("ip netns %v: %v: %s", args, err, out)
	}
}

// handMade makes a namespace the way a user would (ip netns add), removed
// when the test ends.
func handMade(t *testing.T, name string) {
	t.Helper()
	ipNetns(t, "add", name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
}

func exists(name string) bool {
	_, err := os.Stat(filepath.Join(nsDir, name))
	return err == nil
}

// TestRemovesOnlyWhatItMade: a run removes exactly the namespaces it made,
// at its start and at its end: not those of a longer prefix (prefix-b) that
// a live run holds, and not namespaces skyloop did not make, whatever
// their names.
func TestRemovesOnlyWhatItMade(t *testing.T) {
	needRoot(t)
	prefix := testPrefix("own")
	other, err := Up(prefix+"-b", 2, false) // a run of another scenario, live
	if err != nil {
		t.Fatal(err)
	}
	defer other.Down()
	handMade(t, prefix+"-7")   // not skyloop's, named like one of its
	handMade(t, prefix+"-b-9") // the same under the other prefix
	keep := []string{prefix + "-b-0", prefix + "-b-1", prefix + "-7", prefix + "-b-9"}
	check := func(when string) {
		t.Helper()
		for _, n := range keep {
			if !exists(n) {
				t.Errorf("%s: namespace %s was removed", when, n)
			}
		}
	}

	nt, err := Up(prefix, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	check("after Up")
	if err := nt.Down(); err != nil {
		t.Fatal(err)
	}
	check("after Down")
	if exists(prefix+"-0") || exists(prefix+"-1") {
		t.Errorf("Down left its own namespaces")
	}
	if err := other.Down(); err != nil {
		t.Fatal(err)
	}
	if exists(prefix+"-b-0") || !exists(prefix+"-b-9") || !exists(prefix+"-7") {
		t.Errorf("the other run's Down: b-0 %v, b-9 %v, 7 %v; want only b-0 gone", exists(prefix+"-b-0"), exists(prefix+"-b-9"), exists(prefix+"-7"))
	}
}

// TestRemoveReportsWhatItLeft: netns down's removal takes exactly the
// prefix's recorded namespaces, leaves a live run's unless forced, and
// says what it left and why.
func TestRemoveReportsWhatItLeft(t *testing.T) {
	needRoot(t)
	prefix := testPrefix("rm")
	live, err := Up(prefix+"-b", 1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Down()
	handMade(t, prefix+"-5")
	made, err := Up(prefix, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	made.Release() // as netns up leaves them: stale once we say so
	// A second holder of a live prefix is refused, also in this process.
	if _, err := Up(prefix+"-b", 1, false); err == nil || !strings.Contains(err.Error(), "name collision") {
		t.Fatalf("second Up of a held prefix: %v", err)
	}

	m, err := Remove(prefix, false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Removed, " ") != prefix+"-0 "+prefix+"-1" {
		t.Errorf("removed %v", m.Removed)
	}
	why := map[string]string{}
	for _, k := range m.Kept {
		why[k.Name] = k.Why
	}
	if !strings.Contains(why[prefix+"-b-0"], fmt.Sprintf("belongs to prefix %s-b, in use by the running skyloop (pid %d)", prefix, os.Getpid())) ||
		!strings.Contains(why[prefix+"-5"], "not made by skyloop") || len(why) != 2 {
		t.Errorf("kept %+v", m.Kept)
	}
	// The live run's own prefix: refused without --force.
	m, err = Remove(prefix+"-b", false)
	if err == nil || !strings.Contains(err.Error(), "in use by a running skyloop") || len(m.Removed) != 0 || !exists(prefix+"-b-0") {
		t.Fatalf("removing a live run's namespaces: %v, %+v", err, m)
	}
	m, err = Remove(prefix+"-b", true)
	if err != nil || len(m.Removed) != 1 || exists(prefix+"-b-0") {
		t.Fatalf("forced: %v, %+v", err, m)
	}
	// Another run takes the prefix meanwhile; the live run then ends
	// without trouble, and without touching the new run's namespaces.
	newer, err := Up(prefix+"-b", 1, false)
	if err != nil {
		t.Fatalf("Up after a forced removal: %v", err)
	}
	if err := live.Down(); err != nil {
		t.Fatalf("Down after a forced removal: %v", err)
	}
	if !exists(prefix + "-b-0") {
		t.Fatal("the forced-out run removed the namespace of the run that took its prefix")
	}
	if err := newer.Down(); err != nil || exists(prefix+"-b-0") {
		t.Fatalf("the newer run's Down: %v", err)
	}
	if !exists(prefix + "-5") {
		t.Error("the hand-made namespace was removed")
	}
	if _, err := os.Stat(recordPath(prefix + "-b")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("record left: %v", err)
	}
}

// TestUpRefusesForeignNamespaces: a namespace a run would need that
// skyloop did not make is neither removed nor reused: the run is refused
// with a message saying what to do.
func TestUpRefusesForeignNamespaces(t *testing.T) {
	needRoot(t)
	prefix := testPrefix("foreign")
	handMade(t, prefix+"-1")
	err := CheckFree(prefix, 3)
	if err == nil || !strings.Contains(err.Error(), "namespace "+prefix+"-1 exists, and skyloop did not make it") {
		t.Fatalf("CheckFree: %v", err)
	}
	if err := CheckFree(prefix, 1); err != nil {
		t.Fatalf("CheckFree of 1 vehicle: %v", err)
	}
	if _, err := Up(prefix, 3, false); err == nil {
		t.Fatal("Up over a foreign namespace succeeded")
	}
	if !exists(prefix+"-1") || exists(prefix+"-0") {
		t.Errorf("after the refused Up: -0 %v, -1 %v", exists(prefix+"-0"), exists(prefix+"-1"))
	}
	if _, err := os.Stat(recordPath(prefix)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused Up left its record: %v", err)
	}
}

// TestRemoveAll: netns down --all removes every prefix's namespaces whose
// run is gone, and leaves a live run's and those skyloop did not make.
// (Records in a directory of the test's own, so that it cannot touch this
// machine's other runs.)
func TestRemoveAll(t *testing.T) {
	needRoot(t)
	saved := lockDir
	lockDir = t.TempDir()
	defer func() { lockDir = saved }()
	prefix := testPrefix("all")
	gone, err := Up(prefix+"-a", 2, true)
	if err != nil {
		t.Fatal(err)
	}
	gone.Release()
	live, err := Up(prefix+"-b", 1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Down()
	handMade(t, prefix+"-c-0")
	m, err := RemoveAll(false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Removed, " ") != prefix+"-a-0 "+prefix+"-a-1" {
		t.Errorf("removed %v", m.Removed)
	}
	why := map[string]string{}
	for _, k := range m.Kept {
		why[k.Name] = k.Why
	}
	if !strings.Contains(why[prefix+"-b-0"], "in use by the running skyloop") || !strings.Contains(why[prefix+"-c-0"], "not made by skyloop") {
		t.Errorf("kept %+v", m.Kept)
	}
	if !exists(prefix+"-b-0") || !exists(prefix+"-c-0") || exists(prefix+"-a-0") {
		t.Error("RemoveAll removed the wrong namespaces")
	}
}

// TestStaleRecord: the record of a run that is gone is taken over by the
// next run of the prefix, which removes what it lists; a record that names
// anything but the prefix's own namespaces and links is refused, not
// obeyed.
func TestStaleRecord(t *testing.T) {
	needRoot(t)
	prefix := testPrefix("stale")
	handMade(t, prefix+"-0") // as left by a killed run that recorded it
	os.MkdirAll(lockDir, 0o755)
	if err := os.WriteFile(recordPath(prefix), []byte("pid 999999\nveth "+vethName(prefix, 0)+"\nnetns "+prefix+"-0\nnetns "+prefix+"-1"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(recordPath(prefix)) })
	st, err := List()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range st {
		if s.Prefix == prefix {
			found = s.Recorded && s.Owner == 0 && strings.Join(s.Namespaces, " ") == prefix+"-0"
		}
	}
	if !found {
		t.Errorf("List: %+v", st)
	}
	nt, err := Up(prefix, 2, false) // the cut-off last line named -1: never made
	if err != nil {
		t.Fatal(err)
	}
	if err := nt.Down(); err != nil {
		t.Fatal(err)
	}
	if exists(prefix + "-0") {
		t.Error("leftover not removed")
	}

	victim := testPrefix("victim")
	handMade(t, victim+"-0")
	os.WriteFile(recordPath(prefix), []byte("pid 999999\nnetns "+victim+"-0\n"), 0o644)
	if _, err := Up(prefix, 1, false); err == nil || !strings.Contains(err.Error(), "is not a name skyloop gives under prefix "+prefix) {
		t.Fatalf("Up with a record naming another prefix's namespace: %v", err)
	}
	if m, err := Remove(prefix, false); err == nil {
		t.Fatalf("Remove obeyed a bad record: %+v", m)
	}
	if !exists(victim + "-0") {
		t.Fatal("a bad record made skyloop remove a namespace it does not list under its prefix")
	}
}
