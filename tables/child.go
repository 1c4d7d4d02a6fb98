package tables

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode"

	"skyloop/internal/untrusted"
)

// Program is the program that writes and reads the Parquet tables.
const Program = "skyloop-parquet"

// EnvProgram is the environment variable that, when set, is the path of
// Program to run (tests, a program installed elsewhere).
const EnvProgram = "SKYLOOP_PARQUET"

// Install is how a user installs Program, for messages.
const Install = "go install ./cmd/... (in skyloop's repository: installs skyloop and skyloop-parquet)"

// ErrNoProgram is wrapped by the error of a Parquet table when Program is
// not installed.
var ErrNoProgram = errors.New(Program + " is not installed")

// ErrTooLarge is wrapped by the error of a table past a bound (rows, the
// bytes of a column chunk), whether Program or skyloop found it.
var ErrTooLarge = untrusted.ErrTooLarge

// TooLargeStatus is Program's exit status when a table is past a bound.
const TooLargeStatus = 3

// maxStderr bounds what is kept of Program's error output.
const maxStderr = 8 << 10

// program returns the path of Program: $SKYLOOP_PARQUET, else the one
// next to the running executable (as `go install ./cmd/...` puts them),
// else the one on PATH.
func program() (string, error) {
	if p := os.Getenv(EnvProgram); p != "" {
		return p, nil
	}
	exe, err := os.Executable()
	if err == nil {
		p := filepath.Join(filepath.Dir(exe), Program)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(Program); err == nil {
		return p, nil
	}
	where := "on PATH"
	if exe != "" {
		where = "next to " + exe + " or on PATH"
	}
	return "", &notInstalled{fmt.Sprintf("Parquet tables need %s, which was not found %s: install it with %s", Program, where, Install)}
}

// notInstalled is the error of a missing Program; it is ErrNoProgram.
type notInstalled struct{ msg string }

func (e *notInstalled) Error() string        { return e.msg }
func (e *notInstalled) Is(target error) bool { return target == ErrNoProgram }

// Check returns an error naming the install command when Program cannot
// be found.
func Check() error {
	_, err := program()
	return err
}

// command is Program run with args, in a process group of its own so that
// a terminal's Ctrl-C reaches skyloop only (which then closes the tables
// properly), and its error output kept (bounded).
func command(args ...string) (*exec.Cmd, *stderrTail, error) {
	p, err := program()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(p, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	e := &stderrTail{}
	cmd.Stderr = e
	return cmd, e, nil
}

// stderrTail keeps the first maxStderr bytes a program writes.
type stderrTail struct{ b bytes.Buffer }

func (s *stderrTail) Write(p []byte) (int, error) {
	if room := maxStderr - s.b.Len(); room > 0 {
		s.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// text is the program's message, one line per line, its control
// characters shown as '?' (the message may quote an untrusted file).
func (s *stderrTail) text() string {
	t := strings.TrimSpace(s.b.String())
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || r == unicode.ReplacementChar) {
			return '?'
		}
		return r
	}, t)
}

// childError is the error Program reported: its message (which names
// the file), wrapping ErrTooLarge when it says so.
type childError struct {
	msg string
	err error
}

func (e *childError) Error() string { return e.msg }
func (e *childError) Unwrap() error { return e.err }

// failure is the error of a program that ended with err.
func failure(cmd *exec.Cmd, e *stderrTail, err error) error {
	msg := e.text()
	var exit *exec.ExitError
	switch {
	case msg == "":
		return fmt.Errorf("%s failed without a message: %w", cmd.Path, err)
	case errors.As(err, &exit) && exit.ExitCode() == TooLargeStatus:
		return &childError{msg: msg, err: ErrTooLarge}
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return &childError{msg: msg}
	}
	return fmt.Errorf("%s (%s: %w)", msg, cmd.Path, err)
}

// Writer writes rows of type T to a Parquet file through Program, which
// writes the file itself (with package parquetio, the bytes skyloop
// always wrote). Rows go to it over a pipe, so the rows written so far
// reach the file as the run goes; Close ends the stream and waits for the
// file's footer. If skyloop dies, the program sees the pipe close and
// still completes the file with the rows it got. The first error stops
// writing and is returned by Close.
type Writer[T Row] struct {
	cmd    *exec.Cmd
	stderr *stderrTail
	in     io.WriteCloser
	w      *bufio.Writer
	out    *os.File
	b      []byte
	n      int64
	name   string
	err    error
	closed bool
}

// NewWriter starts Program writing table T to out, named name in errors.
func NewWriter[T Row](out *os.File, name string) (*Writer[T], error) {
	cmd, e, err := command("write", Name[T](), name)
	if err != nil {
		return nil, err
	}
	cmd.Stdout = out
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: starting %s: %w", name, cmd.Path, err)
	}
	w := &Writer[T]{cmd: cmd, stderr: e, in: in, w: bufio.NewWriterSize(in, 64<<10), out: out, name: name, b: make([]byte, 0, 256)}
	w.b = AppendHeader[T](w.b)
	w.write()
	return w, nil
}

// write sends w.b.
func (w *Writer[T]) write() {
	if _, err := w.w.Write(w.b); err != nil && w.err == nil {
		w.err = fmt.Errorf("writing %s: %s stopped taking rows: %w", w.name, w.cmd.Path, err)
	}
}

// Add appends a row.
func (w *Writer[T]) Add(r T) {
	if w == nil || w.err != nil || w.closed {
		return
	}
	w.b = AppendRow(w.b[:0], &r)
	w.write()
	w.n++
}

// Close ends the rows and waits for Program to write the file's footer;
// it checks that the file is a whole Parquet file. It can be called again
// (it returns the same error).
func (w *Writer[T]) Close() error {
	if w == nil || w.closed {
		if w == nil {
			return nil
		}
		return w.err
	}
	w.closed = true
	if w.err == nil {
		w.b = AppendEnd(w.b[:0], w.n)
		w.write()
	}
	if err := w.w.Flush(); err != nil && w.err == nil {
		w.err = fmt.Errorf("writing %s: %w", w.name, err)
	}
	w.in.Close()
	if err := w.cmd.Wait(); err != nil {
		// The program's own message says more than a broken pipe.
		w.err = failure(w.cmd, w.stderr, err)
		return w.err
	}
	if w.err == nil {
		w.err = checkParquet(w.out, w.name, w.cmd.Path)
	}
	return w.err
}

// checkParquet checks that f holds a whole Parquet file: its magic at the
// start and at the end.
func checkParquet(f *os.File, name, prog string) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var head, tail [4]byte
	if st.Size() >= 12 {
		_, err1 := f.ReadAt(head[:], 0)
		_, err2 := f.ReadAt(tail[:], st.Size()-4)
		if err1 == nil && err2 == nil && string(head[:]) == "PAR1" && string(tail[:]) == "PAR1" {
			return nil
		}
	}
	return fmt.Errorf("%s: %s ended without error but wrote no whole Parquet file (%d bytes)", name, prog, st.Size())
}

// Read calls f with each row of the Parquet table T in file (size bytes,
// path in errors) as Program reads it, at most maxRows rows: Program gets
// the open file as its standard input and gives the rows back over a
// pipe, where they are checked (the row format, the count, bounded text)
// and counted. f's error stops the reading and is returned as it is.
func Read[T Row](file *os.File, size int64, path string, maxRows int, f func(*T) error) (err error) {
	cmd, e, err := command("read", Name[T](), path, strconv.FormatInt(size, 10), strconv.Itoa(maxRows))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	cmd.Stdin = file
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: starting %s: %w", path, cmd.Path, err)
	}
	stop := func(err error) error {
		cmd.Process.Kill()
		cmd.Wait()
		return err
	}
	d := NewDecoder(out, path+" as read by "+cmd.Path)
	if err := Header[T](d); err != nil {
		if errors.Is(err, ErrVersion) {
			err = fmt.Errorf("%w: %s is of another version than skyloop; reinstall both with %s", err, cmd.Path, Install)
		}
		// An empty stream: the program failed before its first row.
		if werr := cmd.Wait(); werr != nil {
			return failure(cmd, e, werr)
		}
		return err
	}
	var row T
	for Next(d, &row) {
		if d.Rows() > int64(maxRows) {
			return stop(fmt.Errorf("%s as read by %s: more than %d rows (%w)", path, cmd.Path, maxRows, ErrTooLarge))
		}
		if err := f(&row); err != nil {
			return stop(err)
		}
	}
	if d.Err() != nil {
		// A stream cut short: the program's own failure says why, if it
		// failed; else the stream is wrong.
		cmd.Process.Kill()
		var exit *exec.ExitError
		if werr := cmd.Wait(); errors.As(werr, &exit) && exit.Exited() {
			return failure(cmd, e, werr)
		}
		return d.Err()
	}
	if werr := cmd.Wait(); werr != nil {
		return failure(cmd, e, werr)
	}
	return nil
}
