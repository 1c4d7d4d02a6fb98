package px4sitl

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
const transcriptMagic = "SKYPX4T1"

// Directions of transcript records.
const (
	dirToPX4   = 0 // skyloop's frames, kept as a digest
	dirFromPX4 = 1 // PX4's bytes as read from the socket
)

// Record is one transcript entry: what crossed the simulator connection,
// tagged with the time_usec of the last HIL_SENSOR sent before (0 before
// the first). PX4's bytes are kept whole; skyloop's frames only as a
// digest (their length and the first 4 bytes of their SHA-256), which
// keeps a transcript small while still telling whether a replay sends
// exactly what the recording did.
type Record struct {
	FromPX4 bool
	After   uint64
	// Data holds PX4's bytes, or the digest of skyloop's (Digest).
	Data []byte
}

// Digest returns the transcript digest of skyloop's frames b.
func Digest(b []byte) []byte {
	sum := sha256.Sum256(b)
	d := binary.LittleEndian.AppendUint32(nil, uint32(len(b)))
	return append(d, sum[:4]...)
}

// transcript writes records, gzip-compressed: the magic, then per record a
// direction byte, After (uint64), the length (uint32) and the bytes (the
// digest for skyloop's frames), little endian.
type transcript struct {
	gz  *gzip.Writer
	bw  *bufio.Writer
	hdr [13]byte
	err error
}

func newTranscript(w io.Writer) *transcript {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	t := &transcript{gz: gz, bw: bufio.NewWriterSize(gz, 1<<16)}
	t.bw.WriteString(transcriptMagic)
	return t
}

func (t *transcript) record(dir byte, after uint64, b []byte) {
	if t == nil || t.err != nil {
		return
	}
	if dir == dirToPX4 {
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

func (t *transcript) close() error {
	if err := t.bw.Flush(); err != nil && t.err == nil {
		t.err = err
	}
	if err := t.gz.Close(); err != nil && t.err == nil {
		t.err = err
	}
	if t.err != nil {
		return fmt.Errorf("writing the PX4 transcript: %w", t.err)
	}
	return nil
}

// maxRecord bounds one record's length when reading a transcript.
const maxRecord = 1 << 20

// ReadTranscript reads a transcript written with px4.transcript.
func ReadTranscript(r io.Reader) ([]Record, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	br := bufio.NewReader(gz)
	magic := make([]byte, len(transcriptMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != transcriptMagic {
		return nil, errors.New("transcript: not a skyloop PX4 transcript (bad magic)")
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
		rec := Record{FromPX4: hdr[0] == dirFromPX4, After: binary.LittleEndian.Uint64(hdr[1:]), Data: make([]byte, n)}
		if _, err := io.ReadFull(br, rec.Data); err != nil {
			return nil, fmt.Errorf("transcript record %d: %w", len(out), err)
		}
		out = append(out, rec)
	}
}
