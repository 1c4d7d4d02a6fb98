// Package orchestrate runs real programs as if on each simulated vehicle:
// it gives every vehicle a Linux network namespace whose only way to the
// other vehicles is a TAP device into the simulated network, launches
// per-vehicle commands inside those namespaces, and removes everything
// again, also after an interrupted or crashed run.
//
// Layout of vehicle i (prefix P):
//
//	namespace   P-i
//	lo          up (the vehicle's own processes talk over loopback)
//	wifi_tap    10.0.0.(i+1)/24, MAC 02:53:4c:00:00:(i+1), static neighbours
//	            for every other vehicle (no ARP on the simulated network)
//	host_veth   10.100.i.2/24, a direct link to skyloop's side (10.100.i.1)
//	            with no artificial delay, for sensor/actuator traffic
//
// There is no default route: 10.0.0.0/24 goes only through wifi_tap, and the
// only other reachable address is skyloop's end of host_veth, so no path
// from one vehicle to another bypasses the simulator.
package orchestrate

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// MaxVehicles is the largest number of namespaces one run can have (the
// addressing plan has one /24 per vehicle for the host links).
const MaxVehicles = 250

// nsDir is where named network namespaces live (as `ip netns` uses).
const nsDir = "/var/run/netns"

// lockDir holds the records of the namespaces skyloop made, one file per
// prefix (see record).
var lockDir = "/run/skyloop"

// Vehicle is one vehicle's namespace.
type Vehicle struct {
	Index  int
	NS     string           // namespace name
	IP     netip.Addr       // on wifi_tap: 10.0.0.(i+1)
	MAC    net.HardwareAddr // of wifi_tap
	HostIP netip.Addr       // skyloop's end of the host link: 10.100.i.1
	NSHost netip.Addr       // the namespace's end: 10.100.i.2
	veth   string           // skyloop's end's interface name
	// TAP is skyloop's end of wifi_tap: frames the vehicle sends are read
	// here, frames for it are written here (non-blocking, pollable).
	TAP *os.File
}

// Net is the set of namespaces of one run.
type Net struct {
	Prefix   string
	Vehicles []Vehicle
	rec      *record // what this run made; nil once down
}

// VehicleIP returns vehicle i's address on the simulated network.
func VehicleIP(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}) }

// VehicleMAC returns vehicle i's TAP MAC address.
func VehicleMAC(i int) net.HardwareAddr {
	return net.HardwareAddr{0x02, 0x53, 0x4c, 0, byte(i >> 8), byte(i + 1)}
}

// NodeOfIP returns the vehicle index of a 10.0.0.x address, -1 for the
// subnet broadcast, or ok=false for anything else.
func NodeOfIP(ip [4]byte) (int, bool) {
	switch {
	case ip == [4]byte{255, 255, 255, 255} || ip == [4]byte{10, 0, 0, 255}:
		return -1, true
	case ip[0] == 10 && ip[1] == 0 && ip[2] == 0 && ip[3] >= 1 && ip[3] <= MaxVehicles:
		return int(ip[3]) - 1, true
	}
	return 0, false
}

// CheckPrivileges fails with a clear message when the process may not
// create network namespaces.
func CheckPrivileges() error {
	var hdr unix.CapUserHeader
	var data [2]unix.CapUserData
	hdr.Version = unix.LINUX_CAPABILITY_VERSION_3
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	const capNetAdmin, capSysAdmin = unix.CAP_NET_ADMIN, unix.CAP_SYS_ADMIN
	has := func(c int) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	if !has(capNetAdmin) || !has(capSysAdmin) {
		return errors.New("network namespaces need root (or CAP_NET_ADMIN and CAP_SYS_ADMIN): run skyloop with sudo, or without isolation: netns")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("no /dev/net/tun (TAP devices): %w", err)
	}
	return nil
}

// Prefix returns a valid namespace prefix for a run name: "sl-" and up to
// 28 characters of [a-z0-9-] (namespace names are file names; only
// interface names, which do not use the prefix, are limited to 15).
func Prefix(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '-' || r == '_' || r == ' ' || r == '.':
			b.WriteByte('-')
		}
		if b.Len() == maxPrefix-3 {
			break
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		s = "run"
	}
	return "sl-" + s
}

// maxPrefix is the longest namespace prefix.
const maxPrefix = 31

// checkPrefix validates a prefix given by the user.
func checkPrefix(p string) error {
	if !strings.HasPrefix(p, "sl-") || len(p) > maxPrefix || len(p) < 4 {
		return fmt.Errorf("namespace prefix %q must start with sl- and have 4-%d characters", p, maxPrefix)
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Errorf("namespace prefix %q may only use a-z, 0-9 and -", p)
		}
	}
	return nil
}

func vethName(prefix string, i int) string {
	h := fnv.New32a()
	h.Write([]byte(prefix))
	return fmt.Sprintf("slv%05x%d", h.Sum32()&0xfffff, i)
}

// Namespaces lists the existing namespaces of exactly prefix (prefix-0,
// prefix-1, ...; not those of a longer prefix such as prefix-b), whoever
// made them.
func Namespaces(prefix string) ([]string, error) {
	ents, err := os.ReadDir(nsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if vehicleIndex(prefix, e.Name()) >= 0 {
			out = append(out, e.Name())
		}
	}
	sortNames(out)
	return out, nil
}

// sortNames sorts namespace names with their vehicle numbers in numeric
// order (sl-x-2 before sl-x-10).
func sortNames(names []string) {
	key := func(s string) (string, int) {
		i := strings.LastIndexByte(s, '-')
		n, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return s, -1
		}
		return s[:i], n
	}
	sort.Slice(names, func(a, b int) bool {
		pa, na := key(names[a])
		pb, nb := key(names[b])
		if pa != pb {
			return pa < pb
		}
		return na < nb
	})
}

// Status describes the namespaces of one prefix.
type Status struct {
	Prefix string
	// Namespaces are those of the prefix that exist.
	Namespaces []string
	// Owner is the pid of the live skyloop that holds them, 0 when none
	// does (made by netns up, or left by a run that was killed).
	Owner int
	// Recorded is true when skyloop recorded making them; false for
	// namespaces named like skyloop's that no record lists: skyloop did
	// not make them and never removes them.
	Recorded bool
}

// List returns the namespaces skyloop recorded making, by prefix, and
// then the namespaces named like skyloop's ("sl-...") that no record
// lists.
func List() ([]Status, error) {
	var out []Status
	mine := map[string]bool{}
	for _, p := range recordedPrefixes() {
		r, live, err := peekRecord(p)
		if err != nil {
			return nil, err
		}
		if r == nil {
			continue
		}
		st := Status{Prefix: p, Recorded: true}
		if live {
			st.Owner = r.pid
			if st.Owner == 0 {
				st.Owner = -1 // held, by a process that has not written its pid yet
			}
		}
		for _, n := range r.netns {
			mine[n] = true
			if nsExists(n) {
				st.Namespaces = append(st.Namespaces, n)
			}
		}
		sortNames(st.Namespaces)
		out = append(out, st)
	}
	strays, err := unrecorded("sl-")
	if err != nil {
		return nil, err
	}
	by := map[string]*Status{}
	var order []string
	for _, n := range strays {
		if mine[n] {
			continue
		}
		p := n
		if i := strings.LastIndexByte(n, '-'); i > 0 {
			p = n[:i]
		}
		if by[p] == nil {
			by[p] = &Status{Prefix: p}
			order = append(order, p)
		}
		by[p].Namespaces = append(by[p].Namespaces, n)
	}
	for _, p := range order {
		out = append(out, *by[p])
	}
	return out, nil
}

// unrecorded lists the existing namespaces whose names start with start
// and that no record lists.
func unrecorded(start string) ([]string, error) {
	ents, err := os.ReadDir(nsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{}
	for _, p := range recordedPrefixes() {
		if r, _, err := peekRecord(p); err == nil && r != nil {
			for _, n := range r.netns {
				listed[n] = true
			}
		}
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, start) && !listed[n] {
			out = append(out, n)
		}
	}
	sortNames(out)
	return out, nil
}

// Remove deletes the namespaces (and host links) skyloop recorded making
// under exactly prefix, and the record. A live run's are left unless force
// is set. Namespaces whose names start with prefix- but that the record
// does not list (another prefix's, such as prefix-b's, or ones skyloop did
// not make) are left, each with the reason.
func Remove(prefix string, force bool) (Removal, error) {
	var out Removal
	if err := checkPrefix(prefix); err != nil {
		return out, err
	}
	removed, err := removeRecorded(prefix, force)
	out.add(removed)
	var held *heldError
	if errors.As(err, &held) {
		err = fmt.Errorf("namespaces %s-* are in use by a running skyloop (%s): stop it first, or add --force", prefix, pidText(held.pid))
	}
	// Say what is left that the user may have meant.
	others, lerr := List()
	if lerr != nil {
		return out, errors.Join(err, lerr)
	}
	for _, st := range others {
		for _, n := range st.Namespaces {
			if !strings.HasPrefix(n, prefix+"-") {
				continue
			}
			if st.Prefix == prefix && st.Recorded {
				// Still there after the removal: held by a live run.
				out.Kept = append(out.Kept, Kept{n, heldWhy(st)})
				continue
			}
			out.Kept = append(out.Kept, Kept{n, why(st)})
		}
	}
	return out, err
}

func heldWhy(st Status) string {
	if st.Owner != 0 {
		return fmt.Sprintf("in use by the running skyloop (%s); stop it first, or add --force", pidText(st.Owner))
	}
	return "could not be removed"
}

// why explains why a removal of another prefix left st's namespaces.
func why(st Status) string {
	switch {
	case !st.Recorded:
		return "not made by skyloop (no record of it); skyloop leaves it alone (ip netns del removes it)"
	case st.Owner != 0:
		return fmt.Sprintf("belongs to prefix %s, in use by the running skyloop (%s)", st.Prefix, pidText(st.Owner))
	default:
		return fmt.Sprintf("belongs to prefix %s (netns down --prefix %s removes it)", st.Prefix, st.Prefix)
	}
}

// RemoveAll deletes every namespace skyloop recorded making whose run is
// gone (also those of live runs when force is set), and their records.
// Live runs' namespaces, and namespaces named like skyloop's that no
// record lists, are left, each with the reason.
func RemoveAll(force bool) (Removal, error) {
	var out Removal
	var errs []error
	for _, p := range recordedPrefixes() {
		m, err := removeRecorded(p, force)
		out.add(m)
		var held *heldError
		if err != nil && !errors.As(err, &held) { // live runs' are reported as kept
			errs = append(errs, err)
		}
	}
	st, err := List()
	if err != nil {
		return out, errors.Join(append(errs, err)...)
	}
	for _, s := range st {
		for _, n := range s.Namespaces {
			if s.Recorded {
				out.Kept = append(out.Kept, Kept{n, heldWhy(s)})
			} else {
				out.Kept = append(out.Kept, Kept{n, why(s)})
			}
		}
	}
	return out, errors.Join(errs...)
}

// removeRecorded deletes what prefix's record lists, and the record,
// unless a live process holds it and force is not set (a *heldError).
func removeRecorded(prefix string, force bool) (Removal, error) {
	r, err := lockRecord(prefix, false)
	var held *heldError
	switch {
	case errors.As(err, &held) && force:
		// Read it without the lock; the owner finds its namespaces gone
		// and leaves the record file alone (it is no longer its file).
		r, _, err = peekRecord(prefix)
		if err != nil || r == nil {
			return Removal{}, err
		}
		m, err := r.removeMade()
		if err == nil {
			os.Remove(r.path)
		}
		return m, err
	case errors.As(err, &held):
		return Removal{}, err
	case err != nil:
		return Removal{}, err
	case r == nil:
		return Removal{}, nil
	}
	m, err := r.removeMade()
	r.release(err == nil)
	return m, err
}

// CheckFree fails with a clear message when this process may not make
// namespaces, when a live skyloop holds the prefix (a name collision: two
// runs of the same scenario at once), or when one of the n namespaces a
// run would make exists and skyloop did not record making it (it would
// have to remove it, and it never removes what it did not make).
func CheckFree(prefix string, n int) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	if err := CheckPrivileges(); err != nil {
		return err
	}
	r, live, err := peekRecord(prefix)
	if err != nil {
		return err
	}
	if live {
		pid := 0
		if r != nil {
			pid = r.pid
		}
		return &heldError{prefix: prefix, pid: pid}
	}
	return foreign(prefix, n, r)
}

// foreign fails when some of prefix's first n namespaces exist and r
// (prefix's record, possibly nil) does not list them.
func foreign(prefix string, n int, r *record) error {
	names, err := Namespaces(prefix)
	if err != nil {
		return err
	}
	listed := map[string]bool{}
	if r != nil {
		for _, name := range r.netns {
			listed[name] = true
		}
	}
	var strays []string
	for _, name := range names {
		if i := vehicleIndex(prefix, name); i < n && !listed[name] {
			strays = append(strays, name)
		}
	}
	switch len(strays) {
	case 0:
	case 1:
		return fmt.Errorf("namespace %s exists, and skyloop did not make it (no record in %s): skyloop never removes what it did not make; remove it (ip netns del %s) or run the scenario under another name",
			strays[0], lockDir, strays[0])
	default:
		return fmt.Errorf("namespaces %s exist, and skyloop did not make them (no record in %s): skyloop never removes what it did not make; remove them (ip netns del NAME) or run the scenario under another name",
			strings.Join(strays, ", "), lockDir)
	}
	return nil
}

// Up creates n namespaces with the given prefix, first removing the
// leftovers an earlier run with the same prefix recorded (a run that is
// gone). persistentTAP keeps the TAP devices after this process closes
// them (for `skyloop netns up`). On failure everything made so far is
// removed again.
func Up(prefix string, n int, persistentTAP bool) (*Net, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	if n < 1 || n > MaxVehicles {
		return nil, fmt.Errorf("%d vehicles: network namespaces support 1 to %d", n, MaxVehicles)
	}
	if err := CheckPrivileges(); err != nil {
		return nil, err
	}
	rec, err := lockRecord(prefix, true)
	if err != nil {
		return nil, err
	}
	if _, err := rec.removeMade(); err != nil {
		rec.release(false)
		return nil, fmt.Errorf("removing leftovers of an earlier run: %w", err)
	}
	if err := foreign(prefix, n, nil); err != nil {
		rec.release(true) // it lists nothing that still exists
		return nil, err
	}
	if err := rec.start(); err != nil {
		rec.release(false)
		return nil, err
	}
	nt := &Net{Prefix: prefix, rec: rec}
	for i := 0; i < n; i++ {
		v := Vehicle{Index: i, NS: fmt.Sprintf("%s-%d", prefix, i), IP: VehicleIP(i), MAC: VehicleMAC(i),
			HostIP: netip.AddrFrom4([4]byte{10, 100, byte(i), 1}), NSHost: netip.AddrFrom4([4]byte{10, 100, byte(i), 2}),
			veth: vethName(prefix, i)}
		if err := nt.make(&v, n, persistentTAP); err != nil {
			nt.Down()
			return nil, fmt.Errorf("setting up namespace %s: %w", v.NS, err)
		}
		nt.Vehicles = append(nt.Vehicles, v)
	}
	return nt, nil
}

// make records vehicle v's namespace and host link, then makes them.
func (nt *Net) make(v *Vehicle, n int, persistentTAP bool) error {
	if _, err := netlink.LinkByName(v.veth); err == nil {
		return fmt.Errorf("a link named %s exists already, and skyloop's record of %s does not list it (another run's, whose prefix has the same hash, or not skyloop's): run the scenario under another name", v.veth, nt.Prefix)
	}
	if nsExists(v.NS) {
		return fmt.Errorf("namespace %s exists already, and skyloop did not make it: remove it (ip netns del %s) or run the scenario under another name", v.NS, v.NS)
	}
	if err := nt.rec.add("veth", v.veth); err != nil {
		return err
	}
	if err := nt.rec.add("netns", v.NS); err != nil {
		return err
	}
	err := setup(v, n, persistentTAP)
	var ex *existsError
	if errors.As(err, &ex) {
		// Made by someone else between the check and now: not ours.
		nt.rec.retract(ex.kind, ex.name)
	}
	if err != nil && v.TAP != nil {
		v.TAP.Close()
		v.TAP = nil
	}
	return err
}

// existsError is setup's error when the namespace or link it is to make
// exists already.
type existsError struct {
	kind, name string
	err        error
}

func (e *existsError) Error() string {
	what := map[string]string{"netns": "namespace", "veth": "link"}[e.kind]
	return fmt.Sprintf("creating %s %s: it exists already (made by someone else meanwhile): %v", what, e.name, e.err)
}

func (e *existsError) Unwrap() error { return e.err }

// Down closes the TAP devices and removes what this run made (its record
// lists) and the record. It leaves everything else alone.
func (nt *Net) Down() error {
	nt.closeTAPs()
	if nt.rec == nil {
		return nil
	}
	var err error
	if nt.rec.ours() {
		_, err = nt.rec.removeMade()
	} // else removed by netns down --force, and the names may be another run's now
	nt.rec.release(err == nil)
	nt.rec = nil
	return err
}

// Release closes the TAP devices and gives the namespaces up without
// removing them (skyloop netns up): the record stays, with this process as
// its owner, so that once this process has ended netns down, or the next
// run with the prefix, removes them.
func (nt *Net) Release() {
	nt.closeTAPs()
	if nt.rec != nil {
		nt.rec.release(false)
		nt.rec = nil
	}
}

func (nt *Net) closeTAPs() {
	for i := range nt.Vehicles {
		if f := nt.Vehicles[i].TAP; f != nil {
			f.Close()
			nt.Vehicles[i].TAP = nil
		}
	}
}

// setup creates vehicle v's namespace and links. It runs on a locked OS
// thread that enters the new namespace and comes back.
func setup(v *Vehicle, n int, persistentTAP bool) (err error) {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("getting the current namespace: %w", err)
	}
	defer orig.Close()
	defer func() {
		if e := netns.Set(orig); e != nil {
			// The thread is stuck in the vehicle's namespace: leave it locked
			// so that Go retires it instead of reusing it.
			err = errors.Join(err, fmt.Errorf("returning to the host namespace: %w", e))
			return
		}
		runtime.UnlockOSThread()
	}()

	// The host link, made in the host namespace.
	peer := v.veth + "p"
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: v.veth}, PeerName: peer}); err != nil {
		if errors.Is(err, syscall.EEXIST) {
			return &existsError{"veth", v.veth, err}
		}
		return fmt.Errorf("creating veth %s: %w", v.veth, err)
	}
	host, err := netlink.LinkByName(v.veth)
	if err != nil {
		return err
	}
	if err := netlink.AddrAdd(host, &netlink.Addr{IPNet: &net.IPNet{IP: v.HostIP.AsSlice(), Mask: net.CIDRMask(24, 32)}}); err != nil {
		return fmt.Errorf("addressing %s: %w", v.veth, err)
	}
	if err := netlink.LinkSetUp(host); err != nil {
		return err
	}
	peerLink, err := netlink.LinkByName(peer)
	if err != nil {
		return err
	}

	ns, err := netns.NewNamed(v.NS) // the thread is now inside
	if err != nil {
		if errors.Is(err, syscall.EEXIST) {
			return &existsError{"netns", v.NS, err}
		}
		return fmt.Errorf("creating namespace: %w", err)
	}
	defer ns.Close()
	if err := netns.Set(orig); err != nil {
		return err
	}
	if err := netlink.LinkSetNsFd(peerLink, int(ns)); err != nil {
		return fmt.Errorf("moving the veth into the namespace: %w", err)
	}
	if err := netns.Set(ns); err != nil {
		return err
	}

	// Inside the vehicle's namespace.
	os.WriteFile("/proc/sys/net/ipv6/conf/all/disable_ipv6", []byte("1"), 0o644)
	os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0o644)
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	hv, err := netlink.LinkByName(peer)
	if err != nil {
		return err
	}
	if err := netlink.LinkSetName(hv, "host_veth"); err != nil {
		return fmt.Errorf("renaming the veth: %w", err)
	}
	if err := netlink.AddrAdd(hv, &netlink.Addr{IPNet: &net.IPNet{IP: v.NSHost.AsSlice(), Mask: net.CIDRMask(24, 32)}}); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(hv); err != nil {
		return err
	}
	f, err := openTAP("wifi_tap", persistentTAP)
	if err != nil {
		return err
	}
	v.TAP = f
	tap, err := netlink.LinkByName("wifi_tap")
	if err != nil {
		return err
	}
	if err := netlink.LinkSetHardwareAddr(tap, v.MAC); err != nil {
		return err
	}
	if err := netlink.AddrAdd(tap, &netlink.Addr{IPNet: &net.IPNet{IP: v.IP.AsSlice(), Mask: net.CIDRMask(24, 32)}}); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(tap); err != nil {
		return err
	}
	for j := 0; j < n; j++ {
		if j == v.Index {
			continue
		}
		nb := &netlink.Neigh{LinkIndex: tap.Attrs().Index, State: netlink.NUD_PERMANENT, IP: VehicleIP(j).AsSlice(), HardwareAddr: VehicleMAC(j)}
		if err := netlink.NeighAdd(nb); err != nil {
			return fmt.Errorf("static neighbour %v: %w", VehicleIP(j), err)
		}
	}
	return nil
}

// openTAP creates (or attaches to) a TAP device in the current thread's
// namespace and returns a non-blocking, pollable file for it.
func openTAP(name string, persistent bool) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("creating TAP %s: %w", name, err)
	}
	if persistent {
		if err := unix.IoctlSetInt(fd, unix.TUNSETPERSIST, 1); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("making TAP %s persistent: %w", name, err)
		}
	}
	return os.NewFile(uintptr(fd), "tap:"+name), nil
}
