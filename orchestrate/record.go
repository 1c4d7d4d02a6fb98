package orchestrate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// A record is the file in which skyloop lists the namespaces and host
// links it makes under one prefix, each written before it is made:
// lockDir/<prefix>.netns. Only what a record lists is ever removed, so a
// namespace skyloop did not make (or another prefix made) is never touched,
// whatever its name.
//
// The process that makes them holds a write lock on the whole record (an
// open file description lock, F_OFD_SETLK) for as long as it lives; the
// kernel drops it when the process ends, however it ends. So a record
// whose lock is free is stale: its owner is gone and what it lists are
// leftovers. Others test the lock (F_OFD_GETLK) without taking it, so
// looking never gets in the way of a run starting. The file also names the
// owner's pid, for messages.
//
// Format, one entry per line:
//
//	pid 1234
//	veth slv0a1b2c0
//	netns sl-x-0
//	-netns sl-x-0     (retracted: it existed already, so it is not ours)
//
// A last line without its newline is a write cut short: the thing it names
// was never made.
type record struct {
	prefix string
	path   string
	f      *os.File // open and locked while this process owns the record
	pid    int
	netns  []string // in order made
	veths  []string
}

// recordExt is the file name extension of records in lockDir.
const recordExt = ".netns"

// maxRecord caps a record's size: two lines per vehicle for MaxVehicles
// vehicles take far less.
const maxRecord = 1 << 20

func recordPath(prefix string) string { return filepath.Join(lockDir, prefix+recordExt) }

// heldError says a live process holds a prefix's record.
type heldError struct {
	prefix string
	pid    int
}

func (e *heldError) Error() string {
	return fmt.Sprintf("name collision: namespaces %s-* belong to a running skyloop (%s); stop it, or run a copy of the scenario under another name", e.prefix, pidText(e.pid))
}

func pidText(pid int) string {
	if pid <= 0 {
		return "pid unknown"
	}
	return "pid " + strconv.Itoa(pid)
}

// lockRecord opens prefix's record (creating it when create is set;
// otherwise a missing record gives nil) and takes its lock for this
// process. Whatever it lists already is left by a process that is gone. It
// fails with a *heldError when a live process holds it.
func lockRecord(prefix string, create bool) (*record, error) {
	flags := os.O_RDWR | os.O_APPEND
	if create {
		if err := os.MkdirAll(lockDir, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", lockDir, err)
		}
		flags |= os.O_CREATE
	}
	path := recordPath(prefix)
	for try := 0; ; try++ {
		f, err := os.OpenFile(path, flags, 0o644)
		if !create && errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", path, err)
		}
		if err := lock(f, unix.F_OFD_SETLK); err != nil {
			r, _ := parseRecord(prefix, path, f)
			f.Close()
			if errors.Is(err, errHeld) {
				pid := 0
				if r != nil {
					pid = r.pid
				}
				return nil, &heldError{prefix: prefix, pid: pid}
			}
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		// The previous owner may have removed the file between our open
		// and our lock: then the lock is on a file nobody else will look
		// at; start again.
		if !samePath(f, path) {
			f.Close()
			if !create {
				return nil, nil
			}
			if try > 10 {
				return nil, fmt.Errorf("%s keeps changing under skyloop: is another skyloop starting and stopping runs of this prefix?", path)
			}
			continue
		}
		r, err := parseRecord(prefix, path, f)
		if err != nil {
			f.Close()
			return nil, err
		}
		r.f = f
		if err := r.adopt(); err != nil {
			f.Close()
			return nil, err
		}
		return r, nil
	}
}

// adopt names this process as the record's owner, listing again what the
// previous owner left (still to be removed), so that the record never
// names a process that is gone while this one holds it.
func (r *record) adopt() error {
	if err := r.f.Truncate(0); err != nil {
		return fmt.Errorf("writing %s: %w", r.path, err)
	}
	r.pid = os.Getpid()
	var b strings.Builder
	fmt.Fprintf(&b, "pid %d\n", r.pid)
	for _, v := range r.veths {
		fmt.Fprintf(&b, "veth %s\n", v)
	}
	for _, n := range r.netns {
		fmt.Fprintf(&b, "netns %s\n", n)
	}
	if _, err := r.f.WriteString(b.String()); err != nil {
		return fmt.Errorf("writing %s: %w", r.path, err)
	}
	return nil
}

// errHeld is lock's error when another open file description holds the
// lock.
var errHeld = errors.New("held")

// lock takes (cmd F_OFD_SETLK) or tests (F_OFD_GETLK) the write lock on
// the whole of f without waiting; errHeld means someone holds it.
func lock(f *os.File, cmd int) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	for {
		err := unix.FcntlFlock(f.Fd(), cmd, &lk)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN || err == unix.EACCES:
			return errHeld
		case err != nil:
			return err
		case cmd == unix.F_OFD_GETLK && lk.Type != unix.F_UNLCK:
			return errHeld
		}
		return nil
	}
}

// samePath reports whether f is still the file at path.
func samePath(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// peekRecord reads prefix's record without keeping it: nil when there is
// none; live says a process holds it.
func peekRecord(prefix string) (r *record, live bool, err error) {
	path := recordPath(prefix)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if err := lock(f, unix.F_OFD_GETLK); err != nil {
		if !errors.Is(err, errHeld) {
			return nil, false, fmt.Errorf("testing the lock of %s: %w", path, err)
		}
		live = true
	}
	r, err = parseRecord(prefix, path, f)
	return r, live, err
}

// parseRecord reads a record from f (from its start). Entries are checked
// against prefix: a namespace must be prefix-<index> and a link the host
// link skyloop names for prefix and an index, so that not even a damaged
// record can make skyloop remove anything else.
func parseRecord(prefix, path string, f *os.File) (*record, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > maxRecord {
		return nil, fmt.Errorf("%s: larger than %d bytes: not a record skyloop wrote", path, maxRecord)
	}
	if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
		b = b[:i+1] // an entry cut short: its object was never made
	}
	r := &record{prefix: prefix, path: path}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 256), maxRecord)
	for line := 1; sc.Scan(); line++ {
		kind, name, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			return nil, fmt.Errorf("%s:%d: %q is not a record entry", path, line, sc.Text())
		}
		bad := func() error {
			return fmt.Errorf("%s:%d: %s %q is not a name skyloop gives under prefix %s", path, line, kind, name, prefix)
		}
		switch kind {
		case "pid":
			pid, err := strconv.Atoi(name)
			if err != nil || pid <= 0 {
				return nil, fmt.Errorf("%s:%d: pid %q is not a process id", path, line, name)
			}
			r.pid = pid
		case "netns", "-netns":
			if vehicleIndex(prefix, name) < 0 {
				return nil, bad()
			}
			if kind == "netns" {
				r.netns = appendNew(r.netns, name)
			} else {
				r.netns = remove(r.netns, name)
			}
		case "veth", "-veth":
			if !isVeth(prefix, name) {
				return nil, bad()
			}
			if kind == "veth" {
				r.veths = appendNew(r.veths, name)
			} else {
				r.veths = remove(r.veths, name)
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown record entry %q", path, line, kind)
		}
	}
	return r, nil
}

// vehicleIndex returns i when name is prefix-i, or -1.
func vehicleIndex(prefix, name string) int {
	s, ok := strings.CutPrefix(name, prefix+"-")
	if !ok || s == "" || len(s) > 3 || (len(s) > 1 && s[0] == '0') {
		return -1
	}
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i >= MaxVehicles {
		return -1
	}
	return i
}

// isVeth reports whether name is the host link of one of prefix's
// vehicles.
func isVeth(prefix, name string) bool {
	stem := vethName(prefix, 0)
	stem = stem[:len(stem)-1]
	s, ok := strings.CutPrefix(name, stem)
	if !ok {
		return false
	}
	i, err := strconv.Atoi(s)
	return err == nil && i >= 0 && i < MaxVehicles && vethName(prefix, i) == name
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func remove(list []string, s string) []string {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// start empties the record this process holds (what it listed is gone)
// and names this process as its owner.
func (r *record) start() error {
	r.netns, r.veths = nil, nil
	return r.adopt()
}

// write appends one entry.
func (r *record) write(kind, name string) error {
	if _, err := fmt.Fprintf(r.f, "%s %s\n", kind, name); err != nil {
		return fmt.Errorf("writing %s: %w", r.path, err)
	}
	return nil
}

// add records that this process is about to make a namespace or link.
func (r *record) add(kind, name string) error {
	if err := r.write(kind, name); err != nil {
		return err
	}
	if kind == "netns" {
		r.netns = append(r.netns, name)
	} else {
		r.veths = append(r.veths, name)
	}
	return nil
}

// retract records that name was not made by this process after all (it
// existed already).
func (r *record) retract(kind, name string) {
	r.write("-"+kind, name)
	if kind == "netns" {
		r.netns = remove(r.netns, name)
	} else {
		r.veths = remove(r.veths, name)
	}
}

// ours reports whether the record file is still the one this process
// holds: netns down --force removes a live run's record, and then another
// run may make the prefix's namespaces again under a new one.
func (r *record) ours() bool { return r.f != nil && samePath(r.f, r.path) }

// release drops the lock and, when remove is set, the file (if it is
// still this record's: a forced removal may have replaced it).
func (r *record) release(remove bool) {
	if r.f == nil {
		return
	}
	if remove && samePath(r.f, r.path) {
		os.Remove(r.path)
	}
	r.f.Close()
	r.f = nil
}

// Kept is a namespace a removal left, and why.
type Kept struct {
	Name string
	Why  string
}

// Removal says what a removal did: the namespaces it deleted and those it
// left.
type Removal struct {
	Removed []string
	Kept    []Kept
}

func (m *Removal) add(o Removal) {
	m.Removed = append(m.Removed, o.Removed...)
	m.Kept = append(m.Kept, o.Kept...)
}

// removeMade deletes what the record lists that still exists, namespaces
// first (a namespace takes its end of the host link with it), except what
// another record lists too. The record itself stays.
func (r *record) removeMade() (Removal, error) {
	var out Removal
	others := claimedElsewhere(r.prefix)
	var errs []error
	for _, n := range r.netns {
		if !nsExists(n) {
			continue
		}
		if p := others[n]; p != "" {
			out.Kept = append(out.Kept, Kept{n, "also recorded under prefix " + p})
			continue
		}
		if err := deleteNS(n); err != nil {
			errs = append(errs, fmt.Errorf("deleting namespace %s: %w", n, err))
			continue
		}
		out.Removed = append(out.Removed, n)
	}
	for _, v := range r.veths {
		if others[v] != "" {
			continue
		}
		l, err := netlink.LinkByName(v)
		if err != nil || l.Type() != "veth" {
			continue // gone with its namespace
		}
		if err := netlink.LinkDel(l); err != nil && !errors.Is(err, syscall.ENODEV) {
			errs = append(errs, fmt.Errorf("deleting link %s: %w", v, err))
		}
	}
	return out, errors.Join(errs...)
}

// claimedElsewhere maps every name listed in a record other than
// prefix's to that record's prefix.
func claimedElsewhere(prefix string) map[string]string {
	out := map[string]string{}
	for _, p := range recordedPrefixes() {
		if p == prefix {
			continue
		}
		r, _, err := peekRecord(p)
		if err != nil || r == nil {
			continue
		}
		for _, n := range r.netns {
			out[n] = p
		}
		for _, v := range r.veths {
			out[v] = p
		}
	}
	return out
}

// recordedPrefixes lists the prefixes that have a record, sorted.
func recordedPrefixes() []string {
	ents, err := os.ReadDir(lockDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		p, ok := strings.CutSuffix(e.Name(), recordExt)
		if ok && e.Type().IsRegular() && checkPrefix(p) == nil {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// nsExists reports whether the named namespace exists.
func nsExists(name string) bool {
	_, err := os.Lstat(filepath.Join(nsDir, name))
	return err == nil
}

// deleteNS removes a named namespace: its bind mount and its file (also a
// file left without its mount by a process killed while making it).
func deleteNS(name string) error {
	path := filepath.Join(nsDir, name)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
