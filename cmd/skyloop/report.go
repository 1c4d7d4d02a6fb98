package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"skyloop/internal/untrusted"
	"skyloop/report"
	"skyloop/sweep"
)

// refusedInput makes a file of a run directory refused as untrusted input
// (not a regular file, over a cap) bad input (exit 2), as a malformed file
// would be.
func refusedInput(err error) error {
	if errors.Is(err, untrusted.ErrNotRegular) || errors.Is(err, untrusted.ErrTooLarge) {
		return usageError{err}
	}
	return err
}

// maxClockBins bounds the per-second bins of report clock over all
// modules: 46 days of one module, 15 of three.
const maxClockBins = 4_000_000

func newReportCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "report",
		Short: "Draw reports from a run directory",
	}
	var out string
	clock := &cobra.Command{
		Use:   "clock RUN_DIR",
		Short: "Plot each module's clock offset from the master (clock.csv of a real-time run)",
		Long: `Reads clock.csv of a real-time run and draws one panel per module (wall clock,
network backend, TAP bridge): its offset from the master clock (the simulation)
against time, as the mean of each second with the second's minimum and maximum as a
shaded band. Writes clock.png in the run directory (or --out) and prints the number of
samples, mean, mean |offset|, min and max per module. See docs/isolation.md.`,
		Example: `  skyloop report clock runs/netns-ping/seed1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			type bin struct {
				sum, min, max float64
				n             int
			}
			mods := map[string]map[int]*bin{}
			type tot struct {
				n                int
				sum, abs, mn, mx float64
			}
			tots := map[string]*tot{}
			bins := 0
			// clock.csv is read as untrusted input (a regular file in
			// the run directory, with caps): t_ns,module,offset_ns.
			err := report.CSVRows(filepath.Join(args[0], "clock.csv"), func(_ map[string]int, rec []string) error {
				if len(rec) < 3 {
					return fmt.Errorf("a row of %d fields, want t_ns,module,offset_ns", len(rec))
				}
				t, err1 := strconv.ParseInt(rec[0], 10, 64)
				off, err2 := strconv.ParseFloat(rec[2], 64)
				if err1 != nil || err2 != nil {
					return fmt.Errorf("bad row %q", rec)
				}
				ms := off / 1e6
				m := mods[rec[1]]
				if m == nil {
					if len(mods) >= report.MaxKinds {
						return fmt.Errorf("more than %d modules", report.MaxKinds)
					}
					name := strings.Clone(rec[1])
					m = map[int]*bin{}
					mods[name] = m
					tots[name] = &tot{mn: math.Inf(1), mx: math.Inf(-1)}
				}
				s := int(t / 1e9)
				b := m[s]
				if b == nil {
					if bins++; bins > maxClockBins {
						return fmt.Errorf("more than %d seconds of samples over all modules", maxClockBins)
					}
					b = &bin{min: math.Inf(1), max: math.Inf(-1)}
					m[s] = b
				}
				b.sum += ms
				b.n++
				b.min, b.max = math.Min(b.min, ms), math.Max(b.max, ms)
				tt := tots[rec[1]]
				tt.n++
				tt.sum += ms
				tt.abs += math.Abs(ms)
				tt.mn, tt.mx = math.Min(tt.mn, ms), math.Max(tt.mx, ms)
				return nil
			})
			if errors.Is(err, os.ErrNotExist) {
				return badInput("%s has no clock.csv: only real-time runs (--realtime) record clocks", args[0])
			}
			if err != nil {
				return refusedInput(err)
			}
			names := make([]string, 0, len(mods))
			for k := range mods {
				names = append(names, k)
			}
			sort.Strings(names)
			var bands []report.Band
			for _, name := range names {
				secs := make([]int, 0, len(mods[name]))
				for s := range mods[name] {
					secs = append(secs, s)
				}
				sort.Ints(secs)
				tt := tots[name]
				b := report.Band{Name: name, Title: fmt.Sprintf("%s: %d samples, mean %+.3f ms, mean |offset| %.3f ms, min %+.3f ms, max %+.3f ms",
					name, tt.n, tt.sum/float64(tt.n), tt.abs/float64(tt.n), tt.mn, tt.mx)}
				for _, s := range secs {
					bn := mods[name][s]
					b.X = append(b.X, float64(s)+0.5)
					b.Mean = append(b.Mean, bn.sum/float64(bn.n))
					b.Lo = append(b.Lo, bn.min)
					b.Hi = append(b.Hi, bn.max)
				}
				bands = append(bands, b)
				fmt.Fprintf(cmd.OutOrStdout(), "%-8s %6d samples  mean %+.3f ms  mean |offset| %.3f ms  min %+.3f ms  max %+.3f ms\n",
					name, tt.n, tt.sum/float64(tt.n), tt.abs/float64(tt.n), tt.mn, tt.mx)
			}
			if len(bands) == 0 {
				return fmt.Errorf("%s: clock.csv has no samples", args[0])
			}
			png, err := report.BandsPNG("clock offset from the master (simulated time), per second", "time (s)", "offset (ms)", bands)
			if err != nil {
				return err
			}
			dest := out
			if dest == "" {
				dest = filepath.Join(args[0], "clock.png")
			}
			if err := report.WriteFile(dest, png); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "plot:", dest)
			return nil
		},
	}
	clock.Flags().StringVar(&out, "out", "", "PNG file to write (default RUN_DIR/clock.png)")
	c.AddCommand(clock)
	var htmlOut string
	html := &cobra.Command{
		Use:   "html RUN_DIR|SWEEP_DIR",
		Short: "Write one self-contained HTML page with a run's or a sweep's tables and figures",
		Long: `Reads a finished run directory (summary.json, and vehicles.csv, deliveries.csv
and trace.csv where the run wrote them) and writes report.html in it (or --out):
one file, figures inlined, that any browser opens offline. It holds the network
table per traffic kind (tx, expected and actual receptions, PDR, drops by reason,
latency mean, p50, p95 and max, overhead), the age of information, the vehicles'
table (final mode and position, distance, energy, maximum speed, arrival error),
and the figures: trajectories, the altitude profile (multirotor runs of at most 12
vehicles), the latency CDF per kind, the packet delivery ratio per second per
kind, and the mean age of information of every receiver/source pair as a heat
map (up to 200 nodes). A figure whose file the run did not write is left out
with a note.

For a sweep directory (an experiment's, or one holding several) the page has,
per experiment, the table skyloop summarize prints (mean ± std over seeds of
the main metrics per variant) and every figure of the experiment's figures
directory.

The directory may be someone else's: its files are read as untrusted input
(regular files inside the directory, with size, line and row caps; an error
names the file that breaks one). Only figures that are regular files inside
the experiment's directory and really PNG files are inlined; any other file
in figures/ (a link out of the directory, a device, a file that is not a PNG)
is skipped, with a note on the page and a warning in the log.`,
		Example: `  skyloop report html runs/quickstart/seed1
  skyloop report html results/netbots`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var page []byte
			var err error
			if _, serr := os.Stat(filepath.Join(args[0], "summary.json")); serr == nil {
				page, err = report.RunHTML(args[0])
			} else {
				page, err = sweep.ReportHTML(args[0])
				if errors.Is(err, sweep.ErrNoResults) {
					return badInput("%s is neither a finished run directory (no summary.json) nor a sweep's (no summary.csv here or one level down)", args[0])
				}
			}
			if err != nil {
				return refusedInput(err)
			}
			path := htmlOut
			if path == "" {
				path = filepath.Join(args[0], "report.html")
			}
			if err := report.WriteFile(path, page); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d KiB)\n", path, len(page)/1024)
			return nil
		},
	}
	html.Flags().StringVar(&htmlOut, "out", "", "HTML file to write (default RUN_DIR/report.html)")
	c.AddCommand(html)
	return c
}
