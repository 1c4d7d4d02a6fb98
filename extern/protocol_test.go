package extern

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFrameRoundTrip(t *testing.T) {
	dst := -1
	in := []*Frame{
		{Type: TypeHello, Version: Version, Token: "abc", Vehicles: []int{3, 4}},
		{Type: TypeSend, Vehicle: 3, Dst: &dst, Port: 9, Kind: "state", Payload: []byte{0, 1, 2, 255}},
		{Type: TypeDone, Vehicle: 4, WakeAt: 123456789, WakeOnRecv: true},
		{Type: TypeTick, Vehicle: 3, T: 5e9, Telemetry: &Telemetry{Pos: [3]float64{1.5, -2, 10}, Mode: "hold"},
			Deliveries: []Delivery{{Src: 1, Dst: -1, Payload: []byte("hi")}}},
	}
	var b []byte
	var err error
	for _, f := range in {
		if b, err = AppendFrame(b, f); err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(bytes.NewReader(b))
	var buf []byte
	for i, want := range in {
		got, err := ReadFrame(r, &buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		a, _ := AppendFrame(nil, got)
		w, _ := AppendFrame(nil, want)
		if !bytes.Equal(a, w) {
			t.Fatalf("frame %d: got %s, want %s", i, a[4:], w[4:])
		}
	}
	if _, err := ReadFrame(r, &buf); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v", err)
	}
}

func TestFrameErrors(t *testing.T) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], MaxFrame+1)
	var buf []byte
	if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(hdr[:])), &buf); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("oversized: %v", err)
	}
	if cap(buf) > 0 {
		t.Error("an oversized prefix allocated its length")
	}
	for _, body := range []string{`{"type":"send"`, `[]`, `{"vehicle": 1}`, `{"type": "bogus"}`, `{"type": "send", "dst": "x"}`} {
		binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
		if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(append(hdr[:], body...))), &buf); err == nil {
			t.Errorf("%s accepted", body)
		}
	}
	binary.BigEndian.PutUint32(hdr[:], 10)
	if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(append(hdr[:], "{}"...))), &buf); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated: %v", err)
	}
}

// FuzzReadFrame: any byte stream yields frames or errors, never a panic or
// an allocation beyond the limit.
func FuzzReadFrame(f *testing.F) {
	dst := 2
	for _, fr := range []*Frame{{Type: TypeDone, Vehicle: 1, WakeAt: 5}, {Type: TypeSend, Vehicle: 1, Dst: &dst, Payload: []byte("xyz")},
		{Type: TypeCommand, Vehicle: 0, Cmd: "goto", Pos: &[3]float64{1, 2, 3}}} {
		b, _ := AppendFrame(nil, fr)
		f.Add(b)
		f.Add(b[:len(b)-1])
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	ev, _ := AppendFrame(nil, &Frame{Type: TypeEvent, Vehicle: 1, Name: "n", Detail: strings.Repeat("é", 3000)})
	f.Add(ev)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		var buf []byte
		for i := 0; i < 100; i++ {
			fr, err := ReadFrame(r, &buf)
			if err != nil {
				return
			}
			if fr.Type == "" {
				t.Fatal("a frame without a type was accepted")
			}
			if cap(buf) > MaxFrame {
				t.Fatal("buffer beyond the limit")
			}
			if fr.Type == TypeCommand {
				// Must not panic on any field values, and what it accepts
				// is plausible.
				if c, err := command(fr); err == nil {
					if verr := c.Validate(); verr != nil {
						t.Fatalf("command %+v accepted: %v", c, verr)
					}
				}
			}
			if fr.Type == TypeEvent {
				name, detail, err := eventText(fr.Name, fr.Detail)
				if err == nil && (len(name) > MaxEventName || len(detail) > MaxEventDetail || !utf8.ValidString(name) || !utf8.ValidString(detail)) {
					t.Fatalf("event text %q / %.40q... (%d bytes) accepted", name, detail, len(detail))
				}
			}
		}
	})
}

// TestEventText: event names are bounded, details cut at a character
// boundary and marked, and both come out valid UTF-8.
func TestEventText(t *testing.T) {
	if _, _, err := eventText(strings.Repeat("n", MaxEventName+1), ""); err == nil || !strings.Contains(err.Error(), "event name of 65 bytes") {
		t.Errorf("long name: %v", err)
	}
	name, detail, err := eventText("", "ok\xff")
	if err != nil || name != "extern" || detail != "ok\uFFFD" {
		t.Errorf("got %q %q %v", name, detail, err)
	}
	for _, n := range []int{MaxEventDetail - 1, MaxEventDetail, MaxEventDetail + 1, 3 * MaxEventDetail} {
		long := strings.Repeat("€", n/3) + strings.Repeat("x", n%3) // 3-byte runes
		_, detail, err := eventText("a", long)
		switch {
		case err != nil:
			t.Errorf("%d bytes: %v", n, err)
		case len(long) <= MaxEventDetail && detail != long:
			t.Errorf("%d bytes: changed", n)
		case len(long) > MaxEventDetail && (len(detail) > MaxEventDetail || !utf8.ValidString(detail) || !strings.HasSuffix(detail, truncMark)):
			t.Errorf("%d bytes: cut to %d bytes, valid %v: %q", n, len(detail), utf8.ValidString(detail), detail[len(detail)-20:])
		}
	}
}
