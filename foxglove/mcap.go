package foxglove

import (
	"fmt"
	"io"
	"strconv"

	"github.com/foxglove/mcap/go/mcap"

	"skyloop/sim"
)

// MCAPProfile is run.mcap's header profile. MCAP's well-known profiles
// (ros1, ros2) do not fit; a custom name says what a reader can rely on:
// every schema is JSON Schema (encoding jsonschema) and every message JSON
// (encoding json), with Foxglove's schemas (foxglove.FrameTransform,
// foxglove.SceneUpdate, foxglove.LocationFix, foxglove.Log) and skyloop's
// own (skyloop.Telemetry, skyloop.NetworkEvent), as docs/foxglove.md lists.
const MCAPProfile = "skyloop"

// MCAP is the sink that writes run.mcap: chunked (1 MiB, uncompressed,
// with CRCs) and indexed, so that readers seek in it. The first error
// stops writing and is returned by End.
type MCAP struct {
	out io.Writer
	w   *mcap.Writer
	seq uint32
	err error
}

// NewMCAP returns a sink writing an MCAP file to out.
func NewMCAP(out io.Writer) *MCAP { return &MCAP{out: out} }

func (m *MCAP) try(err error) {
	if err != nil && m.err == nil {
		m.err = fmt.Errorf("foxglove: writing run.mcap: %w", err)
	}
}

// Start implements Sink: header, schemas, channels and the run's metadata.
func (m *MCAP) Start(run Run, channels []Channel) error {
	w, err := mcap.NewWriter(m.out, &mcap.WriterOptions{Chunked: true, ChunkSize: 1 << 20, Compression: mcap.CompressionNone, IncludeCRC: true})
	if err != nil {
		return fmt.Errorf("foxglove: %w", err)
	}
	m.w = w
	m.try(w.WriteHeader(&mcap.Header{Profile: MCAPProfile, Library: "skyloop"}))
	for _, s := range schemas {
		m.try(w.WriteSchema(&mcap.Schema{ID: s.id, Name: s.name, Encoding: "jsonschema", Data: []byte(s.data)}))
	}
	for _, c := range channels {
		m.try(w.WriteChannel(&mcap.Channel{ID: c.ID, SchemaID: c.SchemaID, Topic: c.Topic, MessageEncoding: "json", Metadata: map[string]string{}}))
		// Every channel gets its count in the statistics record, 0 for
		// one that carried nothing (the writer lists only those it saw a
		// message on), so that a reader tells "none" from "unknown".
		w.Statistics.ChannelMessageCounts[c.ID] = 0
	}
	m.try(w.WriteMetadata(&mcap.Metadata{Name: "skyloop", Metadata: map[string]string{
		"scenario": run.Scenario, "seed": strconv.FormatUint(run.Seed, 10), "vehicles": strconv.Itoa(run.Vehicles),
		"origin": fmt.Sprintf("%.7f,%.7f,%.2f", run.Origin.Lat, run.Origin.Lon, run.Origin.Alt)}}))
	return m.err
}

// Message implements Sink.
func (m *MCAP) Message(ch uint16, _ int, t sim.Time, data []byte) {
	if m.err != nil || m.w == nil {
		return
	}
	m.seq++
	ns := uint64(max(t, 0))
	m.try(m.w.WriteMessage(&mcap.Message{ChannelID: ch, Sequence: m.seq, LogTime: ns, PublishTime: ns, Data: data}))
}

// End implements Sink: the index and the summary.
func (m *MCAP) End() error {
	if m.w != nil {
		m.try(m.w.Close())
		m.w = nil
	}
	return m.err
}
