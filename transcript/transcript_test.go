package transcript

import (
	"bytes"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Record(FromFirmware, 0, []byte("hello"))
	w.Record(ToFirmware, 4000, []byte("state at 4000"))
	w.Record(FromFirmware, 4000, []byte{1, 2, 3})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || !recs[0].FromFirmware || string(recs[0].Data) != "hello" || recs[1].FromFirmware ||
		recs[1].After != 4000 || !bytes.Equal(recs[1].Data, Digest([]byte("state at 4000"))) || !bytes.Equal(recs[2].Data, []byte{1, 2, 3}) {
		t.Fatalf("read back %+v", recs)
	}
	if bytes.Equal(Digest([]byte("a")), Digest([]byte("b"))) || len(Digest(nil)) != 8 {
		t.Fatal("digests")
	}
	var nilW *Writer
	nilW.Record(ToFirmware, 1, []byte("x")) // a nil writer records nothing
	if err := nilW.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReadRejectsOtherFiles(t *testing.T) {
	if _, err := Read(strings.NewReader("not gzip")); err == nil {
		t.Fatal("read a non-gzip file")
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Close()
	b := buf.Bytes()
	var other bytes.Buffer
	w2 := NewWriter(&other)
	w2.bw.WriteString("xx") // a stream that is not all records
	w2.Close()
	if _, err := Read(bytes.NewReader(other.Bytes())); err == nil {
		t.Fatal("read a truncated record")
	}
	if recs, err := Read(bytes.NewReader(b)); err != nil || len(recs) != 0 {
		t.Fatalf("an empty transcript: %v %v", recs, err)
	}
}
