// Command validation runs the validation matrix (package validation) at
// full length, each run in a child process of its own so that its CPU
// time (ns-3's process included) is measured, and writes
// docs/validation.md. scripts/validation.sh runs it:
//
//	go run ./scripts/validation [-out docs/validation.md] [-only NAME] [-short] [-commit REV] [-keep DIR [-reuse]]
//
// With -keep DIR the run directories stay in DIR, with each run's measured
// times beside it (<run>.times.json); -reuse then takes them instead of
// running again (to rewrite the document after a change of its format).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"skyloop/validation"
)

func main() {
	out := flag.String("out", "docs/validation.md", "where to write the Markdown (- for stdout)")
	only := flag.String("only", "", "run only the cases whose name contains this")
	short := flag.Bool("short", false, "run the CI test's shortened variants (of every case)")
	commit := flag.String("commit", "", "the source revision to name in the document")
	keep := flag.String("keep", "", "keep the run directories under this directory")
	reuse := flag.Bool("reuse", false, "with -keep: take the runs already there (and their measured times) instead of running them again")
	save := flag.String("save", "", "also write the rows as JSON here (the baseline of a later -before)")
	before := flag.String("before", "docs/validation-before.json", "show the rows of this saved matrix beside the new ones (skipped if absent, and with -only or -short)")
	timeout := flag.Duration("timeout", 2*time.Hour, "give up a run after this much wall time")
	one := flag.String("one", "", "internal: run this case once (with -backend, -length, -dir)")
	backend := flag.String("backend", "", "internal: the backend of -one")
	length := flag.Int("length", 0, "internal: the length of -one")
	dir := flag.String("dir", "", "internal: the run directory of -one")
	runK := flag.Int("run", 0, "internal: which of the case's runs (seeds) -one is, from 0")
	flag.Parse()
	outSet := false
	flag.Visit(func(f *flag.Flag) { outSet = outSet || f.Name == "out" })
	if *only != "" && !outSet {
		*out = "-" // a part of the matrix is not docs/validation.md
	}
	if *one != "" {
		if err := runOne(*one, *backend, validation.Length(*length), *runK, *dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *reuse && *keep == "" {
		fmt.Fprintln(os.Stderr, "validation: -reuse needs -keep DIR")
		os.Exit(2)
	}
	var base *validation.Saved
	if *only == "" && !*short && *before != "" {
		b, err := os.ReadFile(*before)
		if err == nil {
			base = new(validation.Saved)
			if err := json.Unmarshal(b, base); err != nil {
				fmt.Fprintf(os.Stderr, "validation: %s: %v\n", *before, err)
				os.Exit(1)
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(os.Stderr, "validation:", err)
			os.Exit(1)
		}
	}
	if err := run(*out, *only, *short, *commit, *keep, *reuse, *timeout, *save, base); err != nil {
		fmt.Fprintln(os.Stderr, "validation:", err)
		os.Exit(1)
	}
}

func findCase(name string) (*validation.Case, error) {
	for _, c := range validation.Cases() {
		if c.Name == name {
			return &c, nil
		}
	}
	return nil, fmt.Errorf("no case %q", name)
}

// runOne runs one case on one backend in this (child) process and writes
// the CPU time of the run alone (this process and its waited-for
// children, ns-3's program, from before the scenario is built to after
// the last output is written) to dir + ".runcpu", in nanoseconds: the
// process's start-up and the matrix's own set-up are the same for both
// backends and are not the network's cost.
func runOne(name, backend string, l validation.Length, k int, dir string) error {
	c, err := findCase(name)
	if err != nil {
		return err
	}
	before := cpuNow()
	if err := c.Run(backend, l, k, dir); err != nil {
		return err
	}
	return os.WriteFile(dir+".runcpu", []byte(strconv.FormatInt(int64(cpuNow()-before), 10)), 0o644)
}

// cpuNow is the user and system time of this process and of its children
// that have been waited for.
func cpuNow() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

// times is what a kept run directory's times.json holds.
type times struct {
	CPU, Wall time.Duration
}

func run(out, only string, short bool, commit, keep string, reuse bool, timeout time.Duration, save string, before *validation.Saved) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this program: %w", err)
	}
	root := keep
	if root == "" {
		if root, err = os.MkdirTemp("", "skyloop-validation-"); err != nil {
			return err
		}
		defer os.RemoveAll(root)
	}
	l := validation.Full
	if short {
		l = validation.Short
	}
	// child runs one case on one backend in a child process and returns
	// its CPU time (user + system, its own children included: ns-3).
	child := func(c *validation.Case, backend string, l validation.Length, k int, dir string) (time.Duration, time.Duration, error) {
		tfile := dir + ".times.json"
		if reuse {
			if b, err := os.ReadFile(tfile); err == nil {
				var t times
				if err := json.Unmarshal(b, &t); err != nil {
					return 0, 0, fmt.Errorf("%s: %w", tfile, err)
				}
				return t.CPU, t.Wall, nil
			}
		}
		// The run replaces dir only if it is a skyloop run directory (or
		// empty): the runner refuses anything else, so that -keep never
		// deletes what skyloop did not write.
		os.Remove(dir + ".runcpu")
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return 0, 0, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, self, "-one", c.Name, "-backend", backend, "-length", strconv.Itoa(int(l)), "-run", strconv.Itoa(k), "-dir", dir)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		t0 := time.Now()
		err := cmd.Run()
		wall := time.Since(t0)
		if ctx.Err() != nil {
			return 0, wall, fmt.Errorf("%s on %s: not finished after %v", c.Name, backend, timeout)
		}
		if err != nil {
			return 0, wall, fmt.Errorf("%s on %s: %w", c.Name, backend, err)
		}
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if b, err := os.ReadFile(dir + ".runcpu"); err == nil {
			// The run's own CPU time, without the process's start-up.
			n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			if err != nil || n <= 0 || time.Duration(n) > cpu {
				return 0, wall, fmt.Errorf("%s on %s: %s: %q is not a CPU time within the process's %v", c.Name, backend, dir+".runcpu", b, cpu)
			}
			cpu = time.Duration(n)
		}
		b, _ := json.Marshal(times{cpu, wall})
		if err := os.WriteFile(tfile, b, 0o644); err != nil {
			return 0, 0, err
		}
		return cpu, wall, nil
	}
	var results []validation.Result
	for _, c := range validation.Cases() {
		if only != "" && !strings.Contains(c.Name, only) {
			continue
		}
		dir := filepath.Join(root, strings.ReplaceAll(c.Name, "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s: running\n", c.Name)
		r := validation.RunCase(&c, l, dir, child, false)
		pass, fail, gap := validation.Counts(r.Rows)
		status := fmt.Sprintf("%d pass, %d FAIL, %d known gap", pass, fail, gap)
		if r.Err != nil {
			status = "error: " + r.Err.Error()
		}
		fmt.Fprintf(os.Stderr, "%s: %s; CPU native %.1f s, ns-3 %.1f s; wall %.1f s, %.1f s\n", c.Name, status,
			r.CPU[0].Seconds(), r.CPU[1].Seconds(), r.Wall[0].Seconds(), r.Wall[1].Seconds())
		results = append(results, r)
	}
	if len(results) == 0 {
		return errors.New("no case matches -only " + only)
	}
	if save != "" {
		b, err := json.MarshalIndent(validation.Save(commit, results), "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(save, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	doc := validation.Doc{Commit: commit, Length: l, Before: before}
	if out == "-" {
		return validation.WriteMarkdown(os.Stdout, doc, results)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := validation.WriteMarkdown(f, doc, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
