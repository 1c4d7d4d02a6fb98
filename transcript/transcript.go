// Package transcript records and reads what crossed the connection
// between skyloop and flight firmware (PX4's simulator link, ArduPilot's
// JSON physics link): the firmware's bytes whole, skyloop's as a digest,
// each tagged with the step it followed. CI replays the firmware's side of
// a recorded flight against the bridge, where the firmware cannot be built.
package transcript

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// transcriptMagic starts a transcript file (after gunzip).
const transcriptMagic = "SKYFWT01"

// Directions of records.
const (
	ToFirmware   = 0 // skyloop's bytes, kept as a digest
	FromFirmware = 1 // the firmware's bytes as read from the socket
)

// Record is one transcript entry: what crossed the connection, tagged with
// the step skyloop last sent (the bridge's own numbering: PX4's time_usec,
// ArduPilot's answered frame; 0 before the first). The firmware's bytes
// are kept whole; skyloop's only as a digest (their length and the first 4
// bytes of their SHA-256), which keeps a transcript small while still
// telling whether a replay sends exactly what the recording did.
type Record struct {
	FromFirmware bool
	After        uint64
	// Data holds the firmware's bytes, or the digest of skyloop's (Digest).
	Data []byte
}

// Digest returns the transcript digest of skyloop's frames b.
func Digest(b []byte) []byte {
	sum := sha256.Sum256(b)
	d := binary.LittleEndian.AppendUint32(nil, uint32(len(b)))
	return append(d, sum[:4]...)
}

// Writer writes records, gzip-compressed: the magic, then per record a
// direction byte, After (uint64), the length (uint32) and the bytes (the
// digest for skyloop's), little endian. A nil Writer writes nothing.
type Writer struct {
	gz  *gzip.Writer
	bw  *bufio.Writer
	hdr [13]byte
	err error
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	t := &Writer{gz: gz, bw: bufio.NewWriterSize(gz, 1<<16)}
	t.bw.WriteString(transcriptMagic)
	return t
}

// Record adds what crossed the connection in direction dir (ToFirmware or
// FromFirmware) after step after.
func (t *Writer) Record(dir byte, after uint64, b []byte) {
	if t == nil || t.err != nil {
		return
	}
	if dir == ToFirmware {
		b = Digest(b)
	}
	t.hdr[0] = dir
	binary.LittleEndian.PutUint64(t.hdr[1:], after)
	binary.LittleEndian.PutUint32(t.hdr[9:], uint32(len(b)))
	t.bw.Write(t.hdr[:])
	if _, err := t.bw.Write(b); err != nil {
		t.err = err
	}
}

// Close flushes and ends the gzip stream (not the underlying writer).
func (t *Writer) Close() error {
	if t == nil {
		return nil
	}
	if err := t.bw.Flush(); err != nil && t.err == nil {
		t.err = err
	}
	if err := t.gz.Close(); err != nil && t.err == nil {
		t.err = err
	}
	if t.err != nil {
		return fmt.Errorf("writing the transcript: %w", t.err)
	}
	return nil
}

// maxRecord bounds one record's length when reading a transcript.
const maxRecord = 1 << 20

// Read reads a transcript.
func Read(r io.Reader) ([]Record, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	br := bufio.NewReader(gz)
	magic := make([]byte, len(transcriptMagic))
	// SKYPX4T1 is the same format, from when only PX4 had transcripts.
	if _, err := io.ReadFull(br, magic); err != nil || (string(magic) != transcriptMagic && string(magic) != "SKYPX4T1") {
		return nil, errors.New("transcript: not a skyloop firmware transcript (bad magic)")
	}
	var out []Record
	var hdr [13]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("transcript record %d: %w", len(out), err)
		}
		n := binary.LittleEndian.Uint32(hdr[9:])
		if hdr[0] > 1 || n > maxRecord {
			return nil, fmt.Errorf("transcript record %d: bad header (direction %d, length %d)", len(out), hdr[0], n)
		}
		rec := Record{FromFirmware: hdr[0] == FromFirmware, After: binary.LittleEndian.Uint64(hdr[1:]), Data: make([]byte, n)}
		if _, err := io.ReadFull(br, rec.Data); err != nil {
			return nil, fmt.Errorf("transcript record %d: %w", len(out), err)
		}
		out = append(out, rec)
	}
}
