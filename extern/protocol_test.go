package extern

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
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
		{Type: TypeCommand, Vehicle: 0, Cmd: "goto", Pos: &Vec3{1, 2, 3}}} {
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

// TestVectorFields: every vector of every frame type is exactly three
// finite numbers; anything else is refused with an error naming the frame,
// its node and the field (a goto with "pos": [1] used to fly to [1, 0, 0]).
func TestVectorFields(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"type":"command","vehicle":3,"cmd":"goto","pos":[1]}`, "command frame for node 3: field pos: want exactly 3 finite numbers [x, y, z], got an array of 1 number"},
		{`{"type":"command","vehicle":3,"cmd":"goto","pos":[1,2,3,4]}`, "field pos: want exactly 3 finite numbers [x, y, z], got an array of 4 numbers"},
		{`{"type":"command","vehicle":3,"cmd":"goto","pos":[]}`, "field pos: want exactly 3 finite numbers [x, y, z], got an empty array"},
		{`{"type":"command","vehicle":3,"cmd":"goto","pos":[1,"2",3]}`, "got an array holding a string at index 1"},
		{`{"type":"command","vehicle":3,"cmd":"goto","pos":[1,[2],3]}`, "got an array holding an array at index 1"},
		{`{"type":"command","vehicle":3,"cmd":"goto","pos":"1,2,3"}`, "field pos: want exactly 3 finite numbers [x, y, z], got a string"},
		{`{"type":"command","vehicle":3,"cmd":"goto","pos":[1e400,2,3]}`, "field pos: want exactly 3 finite numbers [x, y, z], got number 1e400 at index 0, beyond float64"},
		{`{"type":"command","vehicle":2,"cmd":"velocity","vel":[1,2]}`, "command frame for node 2: field vel: want exactly 3 finite numbers"},
		{`{"type":"command","vehicle":2,"cmd":"goto","pos":[1,2,3],"speed":1e999}`, "field speed: want a finite number, got number 1e999"},
		{`{"type":"tick","vehicle":1,"t":5,"telemetry":{"pos":[1,2],"vel":[0,0,0]}}`, "tick frame for node 1: field telemetry.pos: want exactly 3 finite numbers"},
		{`{"type":"tick","vehicle":1,"t":5,"telemetry":{"pos":[1,2,3],"vel":null}}`, "field telemetry.vel: want exactly 3 finite numbers [x, y, z], got null"},
		{`{"type":"welcome","version":1,"origin":[47.3,8.5]}`, "welcome frame: field origin: want exactly 3 finite numbers"},
		{`{"type":"net_tick","t":5,"positions":[[0,0,0],[1,2]]}`, "net_tick frame: field positions: want exactly 3 finite numbers"},
		{`{"type":"send","vehicle":4,"dst":1,"port":1.5}`, "send frame for node 4: field port: want an integer, got number 1.5"},
		{`{"type":"send","vehicle":4,"dst":1e3}`, "field dst: want an integer, got number 1e3"},
		{`{"type":"done","vehicle":4,"wake_at":"soon"}`, "done frame for node 4: field wake_at: want an integer, got string"},
		{`{"type":"net_done","release":[-1]}`, "net_done frame: field release: want an integer >= 0, got number -1"},
		{`{"type":"tick","vehicle":1,"deliveries":[{"seq":-3}]}`, "field deliveries.seq: want an integer in [0, 4294967295], got number -3"},
		{`{"type":"batch","frames":[{"type":"done","vehicle":5},{"type":"command","vehicle":7,"cmd":"goto","pos":[1]}]}`,
			"malformed command frame for node 7 (frame 1 of a batch): field pos: want exactly 3 finite numbers"},
	}
	for _, c := range cases {
		f, err := DecodeFrame([]byte(c.body))
		if err == nil {
			t.Errorf("%s accepted as %+v", c.body, f)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want %q", c.body, err, c.want)
		}
	}
	// Three finite numbers, with any JSON spacing, decode.
	f, err := DecodeFrame([]byte("{\"type\":\"command\",\"vehicle\":0,\"cmd\":\"goto\",\"pos\":[ 1.5 ,\n-2e1,\t0 ]}"))
	if err != nil || f.Pos[0] != 1.5 || f.Pos[1] != -20 || f.Pos[2] != 0 {
		t.Fatalf("got %v, %v", f, err)
	}
}

// TestVec3MatchesJSON: Vec3's own parser accepts exactly the arrays of
// three numbers encoding/json reads as []float64 (but for null, which it
// refuses), with the same values.
func TestVec3MatchesJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	nums := []string{"0", "-0", "1", "-1.5", "2e3", "2E-3", "1.25e+2", "123456789012345678901234567890", "1e308", "1e309", "-1e400", "4.9e-324", "0.1"}
	spaces := []string{"", " ", "\n", "\t ", "\r\n"}
	others := []string{`"1"`, "null", "true", "[1]", "{}"}
	for i := 0; i < 5000; i++ {
		n := rng.IntN(5)
		var b strings.Builder
		b.WriteString(spaces[rng.IntN(len(spaces))] + "[")
		for j := 0; j < n; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString(spaces[rng.IntN(len(spaces))])
			if rng.IntN(20) == 0 {
				b.WriteString(others[rng.IntN(len(others))])
			} else {
				b.WriteString(nums[rng.IntN(len(nums))])
			}
			b.WriteString(spaces[rng.IntN(len(spaces))])
		}
		b.WriteString("]" + spaces[rng.IntN(len(spaces))])
		in := b.String()
		var want []float64
		werr := json.Unmarshal([]byte(in), &want)
		var got Vec3
		gerr := json.Unmarshal([]byte(in), &got)
		// Stricter than encoding/json: null is not a number (json
		// leaves 0 for it).
		ok := werr == nil && len(want) == 3 && !strings.Contains(in, "null")
		if ok != (gerr == nil) {
			t.Fatalf("%q: Vec3 %v, []float64 %v %v", in, gerr, want, werr)
		}
		if ok && (got[0] != want[0] || got[1] != want[1] || got[2] != want[2]) {
			t.Fatalf("%q: Vec3 %v, []float64 %v", in, got, want)
		}
	}
}
