// Package mavlink makes simulated multirotors speak MAVLink 2 like a PX4
// vehicle, so ground stations (QGroundControl), SDKs (MAVSDK, pymavlink,
// node-mavlink) and companion-computer code can command them, and provides
// the ground-station side used by simulated ground stations and companion
// computers. Frames travel either through the simulated network (so loss
// and delay hit commands and telemetry) or over UDP on loopback in
// real-time runs, with PX4's port conventions.
//
// The package has three layers: a codec (gomavlib frames of the common
// dialect, no goroutines), the Vehicle endpoint and the Client state
// machines (pure: they see simulated time and frames, nothing else), and
// the transports and agent behaviours that connect them to a run.
package mavlink

import (
	"bufio"
	"bytes"
	"fmt"
	"sync"

	"github.com/bluenviron/gomavlib/v3/pkg/dialect"
	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"
	"github.com/bluenviron/gomavlib/v3/pkg/message"
	"github.com/bluenviron/gomavlib/v3/pkg/streamwriter"
)

var (
	rwOnce sync.Once
	rw     *dialect.ReadWriter
)

// dialectRW returns the common dialect's shared encoder tables; they are
// read-only once built.
func dialectRW() *dialect.ReadWriter {
	rwOnce.Do(func() {
		rw = &dialect.ReadWriter{Dialect: common.Dialect}
		if err := rw.Initialize(); err != nil {
			panic(fmt.Sprintf("mavlink: the common dialect does not load: %v", err))
		}
	})
	return rw
}

// Encoder turns messages into MAVLink 2 frames from one system and
// component, numbering them in sequence.
type Encoder struct {
	buf bytes.Buffer
	sw  streamwriter.Writer
}

// NewEncoder returns an encoder for frames from system sys, component comp.
func NewEncoder(sys, comp byte) *Encoder {
	e := &Encoder{}
	e.buf.Grow(280)
	fw := &frame.Writer{ByteWriter: &e.buf, DialectRW: dialectRW()}
	if err := fw.Initialize(); err != nil {
		panic(err) // cannot happen: the writer is given
	}
	e.sw = streamwriter.Writer{FrameWriter: fw, Version: streamwriter.V2, SystemID: sys, ComponentID: comp}
	if err := e.sw.Initialize(); err != nil {
		panic(fmt.Sprintf("mavlink: encoder for system %d: %v", sys, err))
	}
	return e
}

// Encode returns m as one frame. The bytes are valid until the next call.
func (e *Encoder) Encode(m message.Message) ([]byte, error) {
	e.buf.Reset()
	if err := e.sw.Write(m); err != nil {
		return nil, fmt.Errorf("encoding %T: %w", m, err)
	}
	return e.buf.Bytes(), nil
}

// Decoder splits datagrams into frames and decodes the ones of the common
// dialect. It never fails: bad bytes are skipped and counted.
type Decoder struct {
	src bytes.Reader
	br  *bufio.Reader
	fr  frame.Reader
	// Want, when set, selects the message ids worth decoding; other
	// frames are skipped on their header alone (and counted in Skipped),
	// which saves most of the decoding cost of telemetry nobody reads.
	Want func(id uint32) bool
	// Bad counts rejected frames and skipped bytes (bad magic, truncated,
	// wrong checksum, undecodable payload); Unknown counts valid frames of
	// messages outside the common dialect; Skipped counts frames Want
	// turned down.
	Bad, Unknown, Skipped int
}

// skip returns the length of the frame at the start of b when Want turns
// its message down, or 0 to decode it.
func (d *Decoder) skip(b []byte) int {
	if d.Want == nil {
		return 0
	}
	switch {
	case b[0] == frame.V2MagicByte && len(b) >= 10:
		n := 10 + int(b[1]) + 2
		if b[2]&frame.V2FlagSigned != 0 {
			n += 13
		}
		if id := uint32(b[7]) | uint32(b[8])<<8 | uint32(b[9])<<16; n <= len(b) && !d.Want(id) {
			return n
		}
	case b[0] == frame.V1MagicByte && len(b) >= 6:
		if n := 6 + int(b[1]) + 2; n <= len(b) && !d.Want(uint32(b[5])) {
			return n
		}
	}
	return 0
}

// FrameLen returns the length of the MAVLink frame whose header starts b
// (v2 with its signature, or v1), or 0 when b does not start with a frame
// header or the header is incomplete. It checks nothing else: splitting a
// byte stream (a TCP connection) into frames is its use.
func FrameLen(b []byte) int {
	switch {
	case len(b) >= 3 && b[0] == frame.V2MagicByte:
		n := 12 + int(b[1])
		if b[2]&frame.V2FlagSigned != 0 {
			n += 13
		}
		return n
	case len(b) >= 2 && b[0] == frame.V1MagicByte:
		return 8 + int(b[1])
	}
	return 0
}

// WholeFrames splits the start of a byte stream (a TCP connection) from
// what is still arriving: whole is the length of the prefix made of whole
// frames and of bytes that cannot start one (junk, which Decode skips),
// junk how many of those are junk; b[whole:] begins an incomplete frame.
func WholeFrames(b []byte) (whole, junk int) {
	for whole < len(b) {
		if b[whole] != frame.V2MagicByte && b[whole] != frame.V1MagicByte {
			whole++
			junk++
			continue
		}
		n := FrameLen(b[whole:])
		if n == 0 || whole+n > len(b) {
			break
		}
		whole += n
	}
	return whole, junk
}

// NewDecoder returns a decoder.
func NewDecoder() *Decoder {
	d := &Decoder{}
	d.br = bufio.NewReaderSize(&d.src, 512)
	d.fr = frame.Reader{BufByteReader: d.br, DialectRW: dialectRW()}
	if err := d.fr.Initialize(); err != nil {
		panic(err) // cannot happen: the reader is given
	}
	return d
}

// Decode calls fn for every valid frame in data, in order. Frames may not
// span datagrams (MAVLink over UDP sends whole frames). After a bad frame
// the parser resynchronises on the next magic byte after the failed one,
// as MAVLink's reference parser does, so junk never hides later frames.
func (d *Decoder) Decode(data []byte, fn func(f frame.Frame)) {
	d.DecodeRaw(data, func(_ []byte, f frame.Frame) { fn(f) })
}

// DecodeRaw is Decode that also hands fn each frame's bytes (valid until
// fn returns).
func (d *Decoder) DecodeRaw(data []byte, fn func(raw []byte, f frame.Frame)) {
	pos := 0
	for pos < len(data) {
		i := pos
		for i < len(data) && data[i] != frame.V2MagicByte && data[i] != frame.V1MagicByte {
			i++
		}
		if i > pos {
			d.Bad++ // junk skipped
		}
		if i == len(data) {
			return
		}
		rest := data[i:]
		if n := d.skip(rest); n > 0 {
			d.Skipped++
			pos = i + n
			continue
		}
		d.src.Reset(rest)
		d.br.Reset(&d.src)
		f, err := d.fr.Read()
		if err != nil {
			d.Bad++
			pos = i + 1
			continue
		}
		pos = i + len(rest) - d.src.Len() - d.br.Buffered()
		if _, raw := f.GetMessage().(*message.MessageRaw); raw {
			d.Unknown++
			continue
		}
		fn(data[i:pos], f)
	}
}
