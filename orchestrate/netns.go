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
	"path/filepath"
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

// lockDir holds one file per prefix in use, with the owner's pid.
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
	lock     string
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

// owner returns the pid that holds prefix, or 0.
func owner(prefix string) int {
	b, err := os.ReadFile(filepath.Join(lockDir, prefix+".pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	if err := syscall.Kill(pid, 0); err != nil && errors.Is(err, syscall.ESRCH) {
		return 0 // the owner is gone
	}
	return pid
}

// Namespaces lists the existing namespaces whose names start with prefix
// (all skyloop namespaces for "sl-").
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
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// Status describes the namespaces of one prefix.
type Status struct {
	Prefix     string
	Namespaces []string
	Owner      int // pid of the run that holds them, 0 = leftovers
}

// List returns the skyloop namespaces on this machine, grouped by prefix.
func List() ([]Status, error) {
	names, err := Namespaces("sl-")
	if err != nil {
		return nil, err
	}
	by := map[string]*Status{}
	var order []string
	for _, n := range names {
		i := strings.LastIndexByte(n, '-')
		p := n[:i]
		if by[p] == nil {
			by[p] = &Status{Prefix: p, Owner: owner(p)}
			order = append(order, p)
		}
		by[p].Namespaces = append(by[p].Namespaces, n)
	}
	out := make([]Status, 0, len(order))
	for _, p := range order {
		out = append(out, *by[p])
	}
	return out, nil
}

// Remove deletes every namespace of prefix (and with them their links) and
// the prefix's lock, unless a live run other than this process holds it.
func Remove(prefix string) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	if pid := owner(prefix); pid != 0 && pid != os.Getpid() {
		return fmt.Errorf("namespaces %s-* belong to a running skyloop (pid %d); stop it first", prefix, pid)
	}
	err := removeNamespaces(prefix)
	os.Remove(filepath.Join(lockDir, prefix+".pid"))
	return err
}

// removeNamespaces deletes the namespaces and stray host veths of prefix.
func removeNamespaces(prefix string) error {
	names, err := Namespaces(prefix + "-")
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if err := netns.DeleteNamed(n); err != nil {
			errs = append(errs, fmt.Errorf("deleting namespace %s: %w", n, err))
		}
	}
	// A veth whose namespace end is gone disappears with it; remove any
	// stray host end all the same.
	links, _ := netlink.LinkList()
	stem := vethName(prefix, 0)
	stem = stem[:len(stem)-1]
	for _, l := range links {
		if name := l.Attrs().Name; strings.HasPrefix(name, stem) {
			netlink.LinkDel(l)
		}
	}
	return errors.Join(errs...)
}

// CheckFree fails with a clear message when this process may not make
// namespaces, or when a live skyloop holds the prefix (a name collision:
// two runs of the same scenario at once).
func CheckFree(prefix string) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	if err := CheckPrivileges(); err != nil {
		return err
	}
	if pid := owner(prefix); pid != 0 && pid != os.Getpid() {
		return collision(prefix, pid)
	}
	return nil
}

func collision(prefix string, pid int) error {
	return fmt.Errorf("name collision: namespaces %s-* belong to a running skyloop (pid %d); stop it, or run a copy of the scenario under another name", prefix, pid)
}

// takeLock claims prefix for this process: the lock file is created
// exclusively, so two runs starting at once cannot both have it; a lock
// left by a dead process is taken over.
func takeLock(prefix string) (string, error) {
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return "", err
	}
	lock := filepath.Join(lockDir, prefix+".pid")
	for try := 0; ; try++ {
		f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, err = fmt.Fprintln(f, os.Getpid())
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(lock)
				return "", fmt.Errorf("writing %s: %w", lock, err)
			}
			return lock, nil
		}
		if !errors.Is(err, os.ErrExist) || try > 0 {
			return "", fmt.Errorf("creating %s: %w", lock, err)
		}
		pid := owner(prefix)
		if pid == os.Getpid() {
			return lock, nil
		}
		if pid != 0 {
			return "", collision(prefix, pid)
		}
		os.Remove(lock) // stale: its owner is gone
	}
}

// Up creates n namespaces with the given prefix, first removing leftovers
// of an earlier run with the same prefix. persistentTAP keeps the TAP
// devices after this process closes them (for `skyloop netns up`). On
// failure everything made so far is removed again.
func Up(prefix string, n int, persistentTAP bool) (*Net, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	if n < 1 || n > MaxVehicles {
		return nil, fmt.Errorf("%d vehicles: network namespaces support 1 to %d", n, MaxVehicles)
	}
	if err := CheckFree(prefix); err != nil {
		return nil, err
	}
	lock, err := takeLock(prefix)
	if err != nil {
		return nil, err
	}
	if err := removeNamespaces(prefix); err != nil {
		os.Remove(lock)
		return nil, fmt.Errorf("removing leftovers of an earlier run: %w", err)
	}
	nt := &Net{Prefix: prefix, lock: lock}
	for i := 0; i < n; i++ {
		v := Vehicle{Index: i, NS: fmt.Sprintf("%s-%d", prefix, i), IP: VehicleIP(i), MAC: VehicleMAC(i),
			HostIP: netip.AddrFrom4([4]byte{10, 100, byte(i), 1}), NSHost: netip.AddrFrom4([4]byte{10, 100, byte(i), 2}),
			veth: vethName(prefix, i)}
		if err := setup(&v, n, persistentTAP); err != nil {
			nt.Vehicles = append(nt.Vehicles, v)
			nt.Down()
			return nil, fmt.Errorf("setting up namespace %s: %w", v.NS, err)
		}
		nt.Vehicles = append(nt.Vehicles, v)
	}
	return nt, nil
}

// Down closes the TAP devices and removes every namespace and the lock.
func (nt *Net) Down() error {
	for i := range nt.Vehicles {
		if f := nt.Vehicles[i].TAP; f != nil {
			f.Close()
			nt.Vehicles[i].TAP = nil
		}
	}
	return Remove(nt.Prefix)
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
