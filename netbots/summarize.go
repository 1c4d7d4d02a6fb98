package netbots

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// summaryColumns are the metrics Summarize shows, with their headings and
// formats.
var summaryColumns = []struct {
	col, head, format string
}{
	{"pdr", "PDR", "%.3f"},
	{"latency_p50_ms", "lat p50 ms", "%.1f"},
	{"latency_p95_ms", "lat p95 ms", "%.1f"},
	{"aoi_mean_s", "AoI s", "%.3f"},
	{"drop_queue", "queue drops", "%.0f"},
	{"out_of_order", "reordered", "%.0f"},
	{"gap_err_mean_m", "gap err m", "%.3f"},
	{"gap_err_excess_m", "excess m", "%.3f"},
	{"traj_dev_mean_m", "traj dev m", "%.3f"},
	{"ip_bytes_per_s", "IP B/s", "%.0f"},
}

// Summarize prints one table per experiment found at dir (an experiment
// directory, or a directory of them): a row per variant with the mean and
// standard deviation over seeds of the main metrics.
func Summarize(w io.Writer, dir string) error {
	var files []string
	if _, err := os.Stat(filepath.Join(dir, "summary.csv")); err == nil {
		files = []string{filepath.Join(dir, "summary.csv")}
	} else {
		m, _ := filepath.Glob(filepath.Join(dir, "*", "summary.csv"))
		sort.Strings(m)
		files = m
	}
	if len(files) == 0 {
		return fmt.Errorf("%s: %w (no summary.csv here or one level down; run skyloop sweep first)", dir, errNoRuns)
	}
	for i, f := range files {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := summarizeFile(w, f); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

func summarizeFile(w io.Writer, path string) error {
	rows, err := readCSVFile(path)
	if err != nil {
		return err
	}
	if len(rows) < 2 {
		return fmt.Errorf("no runs")
	}
	idx := map[string]int{}
	for i, h := range rows[0] {
		idx[h] = i
	}
	var order []string
	vals := map[string]map[string][]float64{}
	seeds := map[string]int{}
	for _, r := range rows[1:] {
		v := r[idx["variant"]]
		if _, ok := vals[v]; !ok {
			order = append(order, v)
			vals[v] = map[string][]float64{}
		}
		seeds[v]++
		for _, c := range summaryColumns {
			if j, ok := idx[c.col]; ok {
				x, _ := strconv.ParseFloat(r[j], 64)
				vals[v][c.col] = append(vals[v][c.col], x)
			}
		}
	}
	fmt.Fprintf(w, "experiment %s (%d runs; mean ± std over seeds)\n", rows[1][idx["experiment"]], len(rows)-1)
	head := []string{"variant", "seeds"}
	for _, c := range summaryColumns {
		head = append(head, c.head)
	}
	table := [][]string{head}
	for _, v := range order {
		line := []string{v, strconv.Itoa(seeds[v])}
		for _, c := range summaryColumns {
			m, s := MeanStd(vals[v][c.col])
			if math.IsNaN(m) {
				line = append(line, "-")
				continue
			}
			line = append(line, fmt.Sprintf(c.format, m)+"±"+fmt.Sprintf(c.format, s))
		}
		table = append(table, line)
	}
	width := make([]int, len(head))
	for _, l := range table {
		for i, c := range l {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, l := range table {
		var b strings.Builder
		for i, c := range l {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := width[i] - len([]rune(c))
			if i == 0 {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString(strings.Repeat(" ", pad) + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	return nil
}
