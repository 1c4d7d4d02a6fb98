package report

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"skyloop/internal/untrusted"
)

// A run directory may come from someone else (a colleague's results, a
// shard of a cluster sweep): its files are read as untrusted input. Each
// is a regular file inside the directory (untrusted.OpenIn), under its
// size cap, and the CSV tables are read row by row with caps on the line
// length, the rows, and what a reader keeps of them.
const (
	// MaxCSVLine bounds one line of a CSV file of a run directory, in
	// bytes: skyloop's rows are well under a kilobyte.
	MaxCSVLine = 1 << 20
	// MaxWideCSVLine bounds one line of a table whose rows hold a run's
	// whole configuration (summary.csv: from a scenario of at most 1 MiB,
	// with every value's path).
	MaxWideCSVLine = 8 << 20
	// MaxCSVRows bounds the rows of one CSV file: far more than a run
	// writes at its documented limits.
	MaxCSVRows = 100_000_000
	// MaxKinds bounds the distinct traffic kinds a reader collects
	// figures for (a run has a handful).
	MaxKinds = 256
	// MaxSamples bounds the values a Samples keeps in all.
	MaxSamples = 1 << 21
)

// CSVRows reads path's rows after the header, handing each to f with the
// column index by name; f's error stops the reading and comes back with
// the file and line (errors.Is still finds it). The row is reused. The
// file must be a regular file inside its directory (no symbolic link out
// of it) of at most untrusted.MaxCSV bytes, with lines of at most
// MaxCSVLine bytes and at most MaxCSVRows rows; the errors of those caps
// name the file and wrap untrusted.ErrTooLarge or untrusted.ErrNotRegular.
func CSVRows(path string, f func(col map[string]int, row []string) error) error {
	return csvRows(path, MaxCSVLine, f)
}

// WideCSVRows is CSVRows for tables with rows of up to MaxWideCSVLine
// bytes (summary.csv).
func WideCSVRows(path string, f func(col map[string]int, row []string) error) error {
	return csvRows(path, MaxWideCSVLine, f)
}

func csvRows(path string, maxLine int, f func(col map[string]int, row []string) error) error {
	file, err := untrusted.OpenIn(filepath.Dir(path), filepath.Base(path), untrusted.MaxCSV)
	if err != nil {
		return err
	}
	defer file.Close()
	r := csv.NewReader(bufio.NewReaderSize(&lineLimit{r: file, path: path, max: maxLine}, 1<<16))
	r.ReuseRecord = true
	head, err := r.Read()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	col := make(map[string]int, len(head))
	for i, h := range head {
		col[h] = i
	}
	for line := 2; ; line++ {
		row, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if line-1 > MaxCSVRows {
			return fmt.Errorf("%s: more than %d rows (%w)", path, MaxCSVRows, untrusted.ErrTooLarge)
		}
		if err := f(col, row); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
}

// lineLimit fails a read once a line runs past max bytes, before a CSV
// reader would hold all of it (/dev/zero, or a sparse file, is one
// endless line).
type lineLimit struct {
	r     io.Reader
	path  string
	max   int
	run   int // bytes of the current line so far
	lines int // lines ended so far
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for b := p[:n]; ; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			l.run += len(b)
			break
		}
		if l.run+i > l.max {
			l.run += i
			break
		}
		l.run, l.lines, b = 0, l.lines+1, b[i+1:]
	}
	if l.run > l.max {
		return 0, fmt.Errorf("%s:%d: a line longer than %d bytes, not a table skyloop wrote (%w)", l.path, l.lines+1, l.max, untrusted.ErrTooLarge)
	}
	return n, err
}

// Samples keeps the values of several streams (one per key, such as a
// traffic kind) for their distributions, with at most MaxSamples values
// and MaxKinds keys in all: every value while that fits, then every
// second value of each stream, every fourth, and so on (a systematic
// sample, the same for the same input). Below the cap it is exact.
type Samples struct {
	stride int
	kept   int
	by     map[string]*stream
}

type stream struct {
	n int // values added
	v []float64
}

// Add adds v to key's stream; it fails past MaxKinds keys.
func (s *Samples) Add(key string, v float64) error {
	if s.by == nil {
		s.by, s.stride = map[string]*stream{}, 1
	}
	st := s.by[key]
	if st == nil {
		if len(s.by) >= MaxKinds {
			return fmt.Errorf("more than %d kinds (%q is one more)", MaxKinds, key)
		}
		st = &stream{}
		s.by[key] = st
	}
	if st.n%s.stride == 0 {
		st.v = append(st.v, v)
		s.kept++
	}
	st.n++
	if s.kept > MaxSamples {
		// Keep the values whose index is a multiple of the doubled
		// stride: those at even positions of what is kept.
		s.stride *= 2
		s.kept = 0
		for _, st := range s.by {
			k := 0
			for j := 0; j < len(st.v); j += 2 {
				st.v[k] = st.v[j]
				k++
			}
			st.v = st.v[:k]
			s.kept += k
		}
	}
	return nil
}

// Keys returns the keys in order.
func (s *Samples) Keys() []string {
	keys := make([]string, 0, len(s.by))
	for k := range s.by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Values returns the values kept of key's stream, in the order added.
func (s *Samples) Values(key string) []float64 {
	if st := s.by[key]; st != nil {
		return st.v
	}
	return nil
}
