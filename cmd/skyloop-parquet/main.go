// Command skyloop-parquet writes and reads the Parquet tables of skyloop
// runs (scenario: outputs: {format: parquet}) for skyloop, which runs it as
// a child process: skyloop does not link the Parquet library, which takes
// longer to compile than the rest of a first `go run ./cmd/skyloop`.
// Install it with skyloop: `go install ./cmd/...` in the repository puts
// both in the same directory, where skyloop finds it (else on PATH, or at
// $SKYLOOP_PARQUET).
//
// Usage:
//
//	skyloop-parquet write TABLE NAME
//	skyloop-parquet read TABLE PATH SIZE MAXROWS
//
// write reads rows of TABLE (trace, deliveries or vehicles) in package
// tables' row format on standard input and writes the Parquet file to
// standard output, which is the file itself; when its input ends without
// the end mark (skyloop died) it still completes the file with the rows it
// got. read reads the Parquet file of SIZE bytes on standard input (the
// open file, read at offsets) and writes its rows, at most MAXROWS, in the
// row format to standard output. PATH and NAME only name the file in
// messages. Errors go to standard error; the exit status is 3 when a table
// is past a bound, 1 on other errors, 2 on a usage error.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"skyloop/tables"
	"skyloop/tables/parquetio"
)

func main() {
	err := run(os.Args[1:])
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, err)
	switch {
	case errors.Is(err, errUsage):
		os.Exit(2)
	case errors.Is(err, parquetio.ErrTooLarge):
		os.Exit(tables.TooLargeStatus)
	}
	os.Exit(1)
}

var errUsage = errors.New("usage: skyloop-parquet write TABLE NAME | read TABLE PATH SIZE MAXROWS (TABLE: trace, deliveries or vehicles); skyloop runs it, see docs/outputs.md")

func run(args []string) error {
	if len(args) < 2 {
		return errUsage
	}
	switch args[0] {
	case "write":
		if len(args) != 3 {
			return errUsage
		}
		// skyloop ends the rows (or dies, closing the pipe): a signal
		// meant for skyloop must not cut the file short.
		signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		switch args[1] {
		case "trace":
			return write[tables.TraceRow](os.Stdin, os.Stdout, args[2])
		case "deliveries":
			return write[tables.DeliveryRow](os.Stdin, os.Stdout, args[2])
		case "vehicles":
			return write[tables.VehicleRow](os.Stdin, os.Stdout, args[2])
		}
	case "read":
		if len(args) != 5 {
			return errUsage
		}
		size, err1 := strconv.ParseInt(args[3], 10, 64)
		maxRows, err2 := strconv.Atoi(args[4])
		if err1 != nil || err2 != nil || size < 0 || maxRows < 0 {
			return fmt.Errorf("%w: SIZE and MAXROWS are counts", errUsage)
		}
		in := io.NewSectionReader(os.Stdin, 0, size)
		switch args[1] {
		case "trace":
			return read[tables.TraceRow](in, size, args[2], maxRows, os.Stdout)
		case "deliveries":
			return read[tables.DeliveryRow](in, size, args[2], maxRows, os.Stdout)
		case "vehicles":
			return read[tables.VehicleRow](in, size, args[2], maxRows, os.Stdout)
		}
	}
	return errUsage
}

// write writes the rows from in as a Parquet file to out.
func write[T tables.Row](in io.Reader, out io.Writer, name string) error {
	d := tables.NewDecoder(in, "skyloop's rows for "+name)
	if err := tables.Header[T](d); err != nil {
		return err
	}
	t := parquetio.NewTable[T](out, name)
	var row T
	for tables.Next(d, &row) {
		t.Add(row)
	}
	// Complete the file with the rows received, whatever ended them.
	if err := t.Close(); err != nil {
		return err
	}
	if !d.Ended() {
		return fmt.Errorf("%v; %s holds the %d rows received", d.Err(), name, d.Rows())
	}
	return nil
}

// read writes the rows of the Parquet file in to out.
func read[T tables.Row](in io.ReaderAt, size int64, path string, maxRows int, out io.Writer) error {
	w := bufio.NewWriterSize(out, 64<<10)
	b := tables.AppendHeader[T](nil)
	n := int64(0)
	err := parquetio.Read(in, size, path, maxRows, func(r *T) error {
		if _, err := w.Write(b); err != nil {
			return err
		}
		b = tables.AppendRow(b[:0], r)
		n++
		return nil
	})
	if err != nil {
		return err
	}
	w.Write(b)
	w.Write(tables.AppendEnd(nil, n))
	return w.Flush()
}
