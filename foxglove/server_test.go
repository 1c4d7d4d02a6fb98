package foxglove

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// feedSwarm runs a recorder on srv for n vehicles that sample every
// 100 ms of simulated time, each sample moving every vehicle and adding
// a broadcast and a reception per vehicle, as fast as it can until the
// test ends.
func feedSwarm(t *testing.T, srv *Server, n int) {
	t.Helper()
	run := Run{Vehicles: n, Scenario: "swarm"}
	for i := range n {
		run.Nodes = append(run.Nodes, fmt.Sprintf("uav-%d", i))
	}
	rec, err := NewRecorder(run, srv)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var tel vehicle.Telemetry
		p := &netsim.Packet{Kind: netsim.KindState, Dst: netsim.Broadcast, Size: 56}
		for k := 0; ; k++ {
			at := sim.Time(0).Add(sim.Duration(k) * 100 * sim.Millisecond)
			for id := range n {
				select {
				case <-stop:
					return
				default:
				}
				tel.Pos = geom.Vec3{X: float64(id%100) * 20, Y: float64(id/100) * 20, Z: 10 + 0.01*float64(k)}
				rec.Vehicle(at, id, &tel)
				p.Src, p.TGen = netsim.NodeID(id), at
				rec.Trace(&netsim.TraceEvent{Type: netsim.EvTx, T: at, P: p, Node: -1, RxPower: math.NaN()})
				rec.Trace(&netsim.TraceEvent{Type: netsim.EvRx, T: at.Add(sim.Millisecond), P: p, Node: netsim.NodeID((id + 1) % n), RxPower: -70})
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done; rec.Close() })
}

// traffic is what a client got: data bytes and messages by topic.
type traffic struct {
	mu       sync.Mutex
	bytes    map[string]int
	msgs     map[string]int
	seen     map[string]bool // topics got since connecting
	lastPos  []any
	counting bool
}

// dialCounting connects a client to srv that subscribes to the topics
// pick accepts and counts what it gets while counting is on.
func dialCounting(t *testing.T, srv *Server, pick func(topic string) bool) *traffic {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	conn, _, err := websocket.Dial(ctx, srv.URL(), &websocket.DialOptions{Subprotocols: []string{Subprotocol}})
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(64 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	tr := &traffic{bytes: map[string]int{}, msgs: map[string]int{}, seen: map[string]bool{}}
	topics := map[uint32]string{}
	go func() {
		for {
			typ, b, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if typ == websocket.MessageText {
				var m struct {
					Op       string `json:"op"`
					Channels []struct {
						ID    uint16 `json:"id"`
						Topic string `json:"topic"`
					} `json:"channels"`
				}
				if json.Unmarshal(b, &m) != nil || m.Op != "advertise" {
					continue
				}
				var subs []map[string]any
				for _, c := range m.Channels {
					if pick(c.Topic) {
						topics[uint32(c.ID)] = c.Topic
						subs = append(subs, map[string]any{"id": c.ID, "channelId": c.ID})
					}
				}
				req, _ := json.Marshal(map[string]any{"op": "subscribe", "subscriptions": subs})
				if conn.Write(ctx, websocket.MessageText, req) != nil {
					return
				}
				continue
			}
			if len(b) < 13 || b[0] != 1 {
				continue
			}
			topic := topics[binary.LittleEndian.Uint32(b[1:])]
			tr.mu.Lock()
			tr.seen[topic] = true
			if tr.counting {
				tr.bytes[topic] += len(b)
				tr.msgs[topic]++
			}
			if topic == TopicPositions {
				var m struct {
					P []any `json:"p"`
				}
				if json.Unmarshal(b[13:], &m) == nil {
					tr.lastPos = m.P
				}
			}
			tr.mu.Unlock()
		}
	}()
	return tr
}

// count counts what tr gets over the next flushes of srv and returns the
// bytes and messages per flush by topic (all topics under "").
func (tr *traffic) count(t *testing.T, srv *Server, flushes uint64) (bytes, msgs map[string]float64) {
	t.Helper()
	tr.mu.Lock()
	clear(tr.bytes)
	clear(tr.msgs)
	tr.counting = true
	tr.mu.Unlock()
	f0 := srv.Flushes()
	for deadline := time.Now().Add(2 * time.Minute); srv.Flushes() < f0+flushes; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server flushed %d times, want %d", srv.Flushes()-f0, flushes)
		}
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.counting = false
	n := float64(srv.Flushes() - f0)
	bytes, msgs = map[string]float64{}, map[string]float64{}
	for k, v := range tr.bytes {
		bytes[k], bytes[""] = float64(v)/n, bytes[""]+float64(v)/n
	}
	for k, v := range tr.msgs {
		msgs[k], msgs[""] = float64(v)/n, msgs[""]+float64(v)/n
	}
	return bytes, msgs
}

// pageTopics are what the web view subscribes to: the batches, the scene,
// the events and the selected vehicle's telemetry.
func pageTopics(topic string) bool {
	switch topic {
	case TopicPositions, TopicNetworkBatch, TopicScene, TopicEvents, TelemetryTopic("uav-0"):
		return true
	}
	return false
}

// TestServerBoundsWhatAPageGets: a client that subscribes as the web view
// does (the batched positions and network events, the scene, the events,
// one vehicle's telemetry) gets at most about PositionsBudget bytes a
// second, in a few messages a flush, at 100 vehicles as at 10,000, and
// its positions hold every vehicle; a client subscribed to every channel
// (Foxglove) still gets the standard per-vehicle topics. On the code
// before the batches the page had to subscribe to /tf, every telemetry
// and /network/events: at 10,000 vehicles about 30,000 messages (5 MB) a
// flush (logged below as "all channels").
func TestServerBoundsWhatAPageGets(t *testing.T) {
	perFlush := float64(PositionsBudget) * FlushPeriod.Seconds()
	for _, n := range []int{100, 10000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			srv, err := NewServer("127.0.0.1:0", ServerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			page := dialCounting(t, srv, pageTopics)
			all := dialCounting(t, srv, func(string) bool { return true })
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
				if c, _ := srv.Clients(); c == 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the clients did not connect")
				}
			}
			feedSwarm(t, srv, n)
			// Steady state: the scene (once, at subscription) has come
			// and the positions of every vehicle.
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
				page.mu.Lock()
				ok := len(page.lastPos) == 3*n && page.lastPos[3*n-1] != nil
				page.mu.Unlock()
				if ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the page client got no positions of every vehicle")
				}
			}
			bytes, msgs := page.count(t, srv, 60)
			allBytes, allMsgs := all.count(t, srv, 30)
			t.Logf("%d vehicles, per flush (%v): page %.0f bytes in %.1f messages (positions %.0f B, network %.0f B); all channels %.0f bytes in %.0f messages",
				n, FlushPeriod, bytes[""], msgs[""], bytes[TopicPositions], bytes[TopicNetworkBatch], allBytes[""], allMsgs[""])
			// The positions keep to their budget (a message may overrun
			// a window by one), the network batch to its cap.
			if b := bytes[TopicPositions]; b > 1.2*perFlush || b == 0 {
				t.Errorf("positions: %.0f bytes a flush, want some and at most about %.0f", b, perFlush)
			}
			if b := bytes[TopicNetworkBatch]; b > 60*NetworkBatchMax || b == 0 {
				t.Errorf("network batches: %.0f bytes a flush, want some and at most %d", b, 60*NetworkBatchMax)
			}
			if m := msgs[""]; m > 6 {
				t.Errorf("%.1f messages a flush, want a few whatever the swarm", m)
			}
			page.mu.Lock()
			got := len(page.lastPos)
			page.mu.Unlock()
			if got != 3*n {
				t.Errorf("the last positions hold %d numbers, want %d", got, 3*n)
			}
			// Foxglove still gets the standard topics, per vehicle.
			for _, topic := range []string{TopicTF, TelemetryTopic(fmt.Sprintf("uav-%d", n-1)), FixTopic("uav-0"), TopicNetwork} {
				all.mu.Lock()
				ok := all.seen[topic]
				all.mu.Unlock()
				if !ok {
					t.Errorf("a client subscribed to all channels got nothing on %s", topic)
				}
			}
		})
	}
}
