package foxglove

import (
	"context"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"skyloop/geom"
	"skyloop/internal/webguard"
	"skyloop/sim"
)

// Subprotocol is the Foxglove WebSocket protocol version the server speaks.
const Subprotocol = "foxglove.websocket.v1"

// Server limits.
const (
	// FlushPeriod is how often the clients get the latest states and the
	// events since the last flush, whatever the simulation's speed.
	FlushPeriod = 40 * time.Millisecond
	// maxEvents is the most events (network events, logs) kept between
	// two flushes; more are dropped and counted, as are frames a slow
	// client cannot take.
	maxEvents = 2000
	// clientQueue is how many frames a client may have waiting.
	clientQueue = 4096
	// writeTimeout bounds one write to a client.
	writeTimeout = 5 * time.Second
	// PositionsBudget bounds the bytes per second of TopicPositions to a
	// client, whatever the swarm's size: a message of all the vehicles'
	// positions goes out every FlushPeriod while it is small, and every
	// few flushes when it is large (about 230 kB, every 6 flushes, at
	// 10,000 vehicles).
	PositionsBudget = 1 << 20
	// NetworkBatchMax is the most network events of one TopicNetworkBatch
	// message (one a flush); the message counts all of them.
	NetworkBatchMax = 250
)

// Topics the server adds to the recorder's for the web view: compact
// batches that keep what a page gets bounded whatever the swarm's size.
// Foxglove gets them advertised too and may ignore them; the standard
// topics (/tf, /vehicles/NAME/..., /network/events) are unchanged.
const (
	// TopicPositions carries every vehicle's latest position in one
	// skyloop.Positions message, at most PositionsBudget bytes a second.
	TopicPositions = "/skyloop/positions"
	// TopicNetworkBatch carries the network events of one flush in one
	// skyloop.NetworkBatch message: the counts of all of them and the
	// first NetworkBatchMax.
	TopicNetworkBatch = "/skyloop/network"
)

// Server serves a run live over the Foxglove WebSocket protocol
// (foxglove.websocket.v1, docs: github.com/foxglove/ws-protocol): Foxglove
// connects to ws://ADDR, and gets the channels the Recorder announces, the
// latest state of each thing at 25 Hz (every FlushPeriod: the vehicles'
// transforms, telemetry and fixes; the scene) and the events since the
// last flush (network events and logs, up to maxEvents each time), with
// the run's simulated time as a Time message (capability "time") whenever
// it has moved: the web view measures the run's true pace by it. The run
// never waits for a client: the recorder's messages only replace a slot
// or join a bounded list, and a client too slow for its frames loses
// them. Several clients may connect at once; a client that subscribes
// late gets the latest states at once. Server implements Sink.
type Server struct {
	ln      net.Listener
	http    *http.Server
	log     *slog.Logger
	pages   http.Handler // plain HTTP requests (the web view), or nil
	token   string       // required of every request when set
	hosts   *webguard.Hosts
	origins []string
	refused time.Time // when a refused WebSocket was last logged

	mu       sync.Mutex
	run      Run
	chans    []Channel
	started  bool
	ended    bool
	clients  map[*client]struct{}
	states   map[stateKey]frame // latest state per thing
	dirty    map[stateKey]bool  // states changed since the last flush
	events   []frame
	dropped  uint64   // events and frames dropped
	now      sim.Time // the latest simulated time of a message
	sentNow  sim.Time // the time last sent to the clients
	flushes  uint64
	batch    batches
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// batches are the state of the server's own channels (TopicPositions,
// TopicNetworkBatch); a channel id of 0 means the channel is not there.
type batches struct {
	posCh, netCh uint16
	pos          []float64 // x, y, z by vehicle id
	posSeen      []bool
	posT         sim.Time
	posDirty     bool
	posAny       bool   // a position has come
	posNext      uint64 // the first flush that may send positions again
	net          netBatch
}

// netBatch is the network events since the last flush.
type netBatch struct {
	t0     sim.Time
	counts [3]int // tx, rx, drop
	ev     []netEvent
}

type netEvent struct {
	t         sim.Time
	typ       int8
	src, node int32
	gen       sim.Time
	state     bool
}

type stateKey struct {
	ch  uint16
	key int
}

type frame struct {
	ch   uint16
	t    sim.Time
	data []byte
}

// client is one connected browser or Foxglove instance.
type client struct {
	conn   *websocket.Conn
	cancel context.CancelFunc // drops the connection
	out    chan outFrame
	mu     sync.Mutex
	subs   map[uint16]uint32 // channel -> subscription id
}

type outFrame struct {
	text bool
	b    []byte
}

// ServerOptions configures a Server.
type ServerOptions struct {
	// Log gets the server's warnings (nil: none).
	Log *slog.Logger
	// Pages serves the requests that are not WebSocket upgrades (the web
	// view); nil answers them 404.
	Pages http.Handler
	// Token, when set, is required of every request, as the query
	// parameter token or the cookie a page request with it sets. It is
	// required on addresses other than loopback.
	Token string
	// Hosts are more names (or addresses) the server is reached by, for
	// the Host check: by default it answers only the names of its listen
	// address (webguard.NewHosts).
	Hosts []string
	// Origins are more origins (scheme://host[:port]) whose pages may
	// open the WebSocket, beyond webguard.CheckWebSocketOrigin's.
	Origins []string
}

// TokenCookie is the cookie that carries the token after the first page
// request, so that the page's scripts and WebSocket need not.
const TokenCookie = "skyloop_token"

// IsLoopback reports whether host (an IP address or localhost) is a
// loopback address.
func IsLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// NewServer listens on addr (host:port; port 0 picks one). An address
// other than loopback needs opt.Token: the protocol has no authentication
// of its own. Every request must name the server in its Host header
// (webguard.Hosts: DNS rebinding gets 421); WebSocket requests must come
// from an origin webguard.CheckWebSocketOrigin allows and get the
// protocol; other requests go to opt.Pages.
func NewServer(addr string, opt ServerOptions) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("foxglove server address %q: %w", addr, err)
	}
	if !IsLoopback(host) && opt.Token == "" {
		return nil, fmt.Errorf("foxglove server address %q: an address other than loopback (127.0.0.1, ::1, localhost) needs a token", addr)
	}
	hosts, err := webguard.NewHosts(addr, opt.Hosts)
	if err != nil {
		return nil, fmt.Errorf("foxglove server: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("foxglove server: %w", err)
	}
	log := opt.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{ln: ln, log: log, pages: opt.Pages, token: opt.Token, hosts: hosts, origins: opt.Origins, clients: map[*client]struct{}{}, states: map[stateKey]frame{},
		dirty: map[stateKey]bool{}, stop: make(chan struct{})}
	s.http = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 5 * time.Second}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("foxglove server stopped", "err", err)
		}
	}()
	go s.flushLoop()
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL returns the WebSocket URL to give Foxglove.
func (s *Server) URL() string { return "ws://" + s.Addr() }

// Clients returns the number of connected clients and of their
// subscriptions.
func (s *Server) Clients() (clients, subscriptions int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.clients {
		c.mu.Lock()
		subscriptions += len(c.subs)
		c.mu.Unlock()
	}
	return len(s.clients), subscriptions
}

// Dropped returns the number of events and frames dropped so far.
func (s *Server) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Start implements Sink: the channels are advertised to every client.
func (s *Server) Start(run Run, channels []Channel) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.run, s.chans, s.started, s.ended = run, s.addBatchChannels(run, channels), true, false
	clear(s.states)
	clear(s.dirty)
	s.events = s.events[:0]
	s.now, s.sentNow = 0, -1
	adv := s.advertise()
	for c := range s.clients {
		s.send(c, outFrame{text: true, b: adv})
	}
	return nil
}

// addBatchChannels returns channels with the server's own (TopicPositions
// and TopicNetworkBatch) after them, when the run has vehicles and the
// channel ids allow, and readies their state.
func (s *Server) addBatchChannels(run Run, channels []Channel) []Channel {
	b := &s.batch
	*b = batches{pos: b.pos[:0], posSeen: b.posSeen[:0], net: netBatch{ev: b.net.ev[:0]}}
	var last uint16
	for _, c := range channels {
		last = max(last, c.ID)
	}
	if run.Vehicles <= 0 || last > math.MaxUint16-2 {
		return channels
	}
	b.posCh, b.netCh = last+1, last+2
	b.pos = append(b.pos, make([]float64, 3*run.Vehicles)...)
	b.posSeen = append(b.posSeen, make([]bool, run.Vehicles)...)
	out := append([]Channel(nil), channels...)
	return append(out,
		Channel{ID: b.posCh, Topic: TopicPositions, SchemaName: "skyloop.Positions", Schema: positionsSchema},
		Channel{ID: b.netCh, Topic: TopicNetworkBatch, SchemaName: "skyloop.NetworkBatch", Schema: networkBatchSchema})
}

// Position implements PositionSink: vehicle id's latest position for
// TopicPositions.
func (s *Server) Position(t sim.Time, id int, p geom.Vec3) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := &s.batch
	if id < 0 || id >= len(b.posSeen) {
		return
	}
	b.pos[3*id], b.pos[3*id+1], b.pos[3*id+2] = p.X, p.Y, p.Z
	b.posSeen[id] = true
	b.posT = max(b.posT, t)
	b.posDirty, b.posAny = true, true
}

// NetworkEvent implements NetworkSink: a network event for
// TopicNetworkBatch (typ 0 tx, 1 rx, 2 drop; state tells a state update
// from other traffic).
func (s *Server) NetworkEvent(t sim.Time, typ int8, src, node int32, gen sim.Time, state bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := &s.batch.net
	if s.batch.netCh == 0 || typ < 0 || typ > 2 {
		return
	}
	if n.counts == [3]int{} {
		n.t0 = t
	}
	n.counts[typ]++
	if len(n.ev) < NetworkBatchMax {
		n.ev = append(n.ev, netEvent{t: t, typ: typ, src: src, node: node, gen: gen, state: state})
	}
}

// Flushes returns the number of flushes so far (one every FlushPeriod).
func (s *Server) Flushes() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushes
}

// Message implements Sink; it never blocks.
func (s *Server) Message(ch uint16, key int, t sim.Time, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = max(s.now, t)
	if key < 0 {
		if len(s.events) >= maxEvents {
			s.dropped++
			return
		}
		s.events = append(s.events, frame{ch: ch, t: t, data: data})
		return
	}
	k := stateKey{ch, key}
	s.states[k] = frame{ch: ch, t: t, data: data}
	s.dirty[k] = true
}

// End implements Sink: the last states and events go out, and the
// clients are told the run is over.
func (s *Server) End() error {
	s.mu.Lock()
	s.batch.posNext = 0 // the last positions go out now
	s.mu.Unlock()
	s.flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	msg := s.endedStatus()
	for c := range s.clients {
		s.send(c, outFrame{text: true, b: msg})
	}
	return nil
}

// endedStatus is the status message that tells a client the run is over.
// Callers hold s.mu.
func (s *Server) endedStatus() []byte {
	msg, _ := json.Marshal(map[string]any{"op": "status", "level": 0, "message": "skyloop: the run " + s.run.Scenario + " has ended"})
	return msg
}

// DropClients drops every client's connection at once, as a write that
// times out does (a client too slow for writeTimeout), and returns how
// many it dropped. The server goes on; a client that connects again gets
// the channels and the latest states anew (the web view reconnects by
// itself).
func (s *Server) DropClients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.clients {
		c.cancel()
	}
	return len(s.clients)
}

// Close stops the server and disconnects the clients.
func (s *Server) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	s.mu.Lock()
	for c := range s.clients {
		c.conn.Close(websocket.StatusGoingAway, "skyloop is exiting")
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// advertise returns the advertise message of the current channels.
func (s *Server) advertise() []byte {
	type ch struct {
		ID             uint16 `json:"id"`
		Topic          string `json:"topic"`
		Encoding       string `json:"encoding"`
		SchemaName     string `json:"schemaName"`
		Schema         string `json:"schema"`
		SchemaEncoding string `json:"schemaEncoding"`
	}
	chs := make([]ch, len(s.chans))
	for i, c := range s.chans {
		chs[i] = ch{ID: c.ID, Topic: c.Topic, Encoding: "json", SchemaName: c.SchemaName, Schema: c.Schema, SchemaEncoding: "jsonschema"}
	}
	b, _ := json.Marshal(map[string]any{"op": "advertise", "channels": chs})
	return b
}

// send queues f for c, dropping it when c is too slow. Callers hold s.mu.
func (s *Server) send(c *client, f outFrame) {
	select {
	case c.out <- f:
	default:
		s.dropped++
	}
}

// timeFrame encodes a Time frame (capability "time"): opcode 2, the
// server's current time (ns), here the run's simulated time.
func timeFrame(t sim.Time) []byte {
	b := make([]byte, 9)
	b[0] = 2
	binary.LittleEndian.PutUint64(b[1:], uint64(max(t, 0)))
	return b
}

// dataFrame encodes a Message Data frame: opcode 1, subscription id,
// timestamp (ns), payload.
func dataFrame(sub uint32, t sim.Time, data []byte) []byte {
	b := make([]byte, 13, 13+len(data))
	b[0] = 1
	binary.LittleEndian.PutUint32(b[1:], sub)
	binary.LittleEndian.PutUint64(b[5:], uint64(max(t, 0)))
	return append(b, data...)
}

func (s *Server) flushLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(FlushPeriod)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.flush()
		}
	}
}

// flush sends the states changed and the events since the last flush to
// every client subscribed to their channels.
func (s *Server) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushes++
	var out []frame
	for k := range s.dirty {
		out = append(out, s.states[k])
	}
	clear(s.dirty)
	out = append(out, s.events...)
	s.events = s.events[:0]
	if pos := s.positionsDue(); pos != nil {
		out = append(out, *pos)
	}
	if s.batch.net.counts != [3]int{} {
		out = append(out, s.networkFrame())
	}
	var now []byte
	if s.started && s.now != s.sentNow {
		now, s.sentNow = timeFrame(s.now), s.now
	}
	if len(out) == 0 && now == nil {
		return
	}
	for c := range s.clients {
		if now != nil {
			s.send(c, outFrame{b: now})
		}
		c.mu.Lock()
		for _, f := range out {
			if sub, ok := c.subs[f.ch]; ok {
				s.send(c, outFrame{b: dataFrame(sub, f.t, f.data)})
			}
		}
		c.mu.Unlock()
	}
}

// anySubscribed reports whether a client is subscribed to channel ch.
// Callers hold s.mu.
func (s *Server) anySubscribed(ch uint16) bool {
	for c := range s.clients {
		c.mu.Lock()
		_, ok := c.subs[ch]
		c.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// positionsDue returns the TopicPositions frame when positions have
// changed, a client takes them and the budget allows, else nil. A message
// of n bytes holds the channel for the next n/(PositionsBudget *
// FlushPeriod) flushes. Callers hold s.mu.
func (s *Server) positionsDue() *frame {
	b := &s.batch
	if b.posCh == 0 || !b.posDirty || s.flushes < b.posNext || !s.anySubscribed(b.posCh) {
		return nil
	}
	f := s.positionsFrame()
	perFlush := float64(PositionsBudget) * FlushPeriod.Seconds()
	b.posNext = s.flushes + uint64(math.Ceil(float64(len(f.data))/perFlush))
	b.posDirty = false
	return &f
}

// positionsFrame encodes the skyloop.Positions message: {"timestamp",
// "p": [x0, y0, z0, x1, ...]} by vehicle id, to the centimetre, null for
// a vehicle not sampled yet. Callers hold s.mu.
func (s *Server) positionsFrame() frame {
	b := &s.batch
	buf := make([]byte, 0, 64+24*len(b.posSeen))
	st := stampOf(b.posT)
	buf = append(buf, `{"timestamp":{"sec":`...)
	buf = strconv.AppendInt(buf, st.Sec, 10)
	buf = append(buf, `,"nsec":`...)
	buf = strconv.AppendInt(buf, st.Nsec, 10)
	buf = append(buf, `},"p":[`...)
	for i, seen := range b.posSeen {
		for k := range 3 {
			if i+k > 0 {
				buf = append(buf, ',')
			}
			v := b.pos[3*i+k]
			if !seen || math.IsNaN(v) || math.IsInf(v, 0) {
				buf = append(buf, "null"...)
				continue
			}
			buf = strconv.AppendFloat(buf, math.Round(v*100)/100, 'f', -1, 64)
		}
	}
	buf = append(buf, "]}"...)
	return frame{ch: b.posCh, t: b.posT, data: buf}
}

// networkFrame encodes and resets the network events since the last
// flush as a skyloop.NetworkBatch message: {"timestamp" (the first
// event's), "counts": [tx, rx, drop] of all of them, "events": [[t_s,
// type, src, node, t_gen_s, state], ...] of the first NetworkBatchMax}.
// Callers hold s.mu.
func (s *Server) networkFrame() frame {
	n := &s.batch.net
	buf := make([]byte, 0, 96+48*len(n.ev))
	st := stampOf(n.t0)
	buf = append(buf, `{"timestamp":{"sec":`...)
	buf = strconv.AppendInt(buf, st.Sec, 10)
	buf = append(buf, `,"nsec":`...)
	buf = strconv.AppendInt(buf, st.Nsec, 10)
	buf = append(buf, `},"counts":[`...)
	for i, c := range n.counts {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, int64(c), 10)
	}
	buf = append(buf, `],"events":[`...)
	secs := func(t sim.Time) []byte { return strconv.AppendFloat(buf, float64(t)/1e9, 'f', -1, 64) }
	for i, e := range n.ev {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '[')
		buf = secs(e.t)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(e.typ), 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(e.src), 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(e.node), 10)
		buf = append(buf, ',')
		buf = secs(e.gen)
		buf = append(buf, ',')
		buf = strconv.AppendBool(buf, e.state)
		buf = append(buf, ']')
	}
	buf = append(buf, "]}"...)
	f := frame{ch: s.batch.netCh, t: n.t0, data: buf}
	n.counts, n.ev = [3]int{}, n.ev[:0]
	return f
}

// serve upgrades a connection and runs the client until it leaves.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if !s.hosts.CheckHost(w, r) {
		return
	}
	webguard.SetHeaders(w.Header())
	queryToken := false
	if s.token != "" {
		q := r.URL.Query().Get("token")
		c, _ := r.Cookie(TokenCookie)
		ok := q != "" && subtle.ConstantTimeCompare([]byte(q), []byte(s.token)) == 1
		queryToken = ok
		if !ok && c != nil {
			ok = subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.token)) == 1
		}
		if !ok {
			http.Error(w, "a token is required: open the address skyloop printed, with its ?token=", http.StatusUnauthorized)
			return
		}
		if q != "" {
			http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		if s.pages == nil {
			http.NotFound(w, r)
			return
		}
		s.pages.ServeHTTP(w, r)
		return
	}
	if err := webguard.CheckWebSocketOrigin(r, queryToken, s.origins); err != nil {
		s.mu.Lock()
		if time.Since(s.refused) > 10*time.Second { // a page retrying must not flood the log
			s.refused = time.Now()
			s.log.Warn("foxglove server: WebSocket from another site's page refused", "origin", r.Header.Get("Origin"), "remote", r.RemoteAddr)
		}
		s.mu.Unlock()
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	// The origin is checked above, by skyloop's rule.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{Subprotocol}, InsecureSkipVerify: true})
	if err != nil {
		return
	}
	if conn.Subprotocol() != Subprotocol {
		conn.Close(websocket.StatusPolicyViolation, "the client must offer the "+Subprotocol+" subprotocol")
		return
	}
	conn.SetReadLimit(1 << 20)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	c := &client{conn: conn, cancel: cancel, out: make(chan outFrame, clientQueue), subs: map[uint16]uint32{}}
	info, _ := json.Marshal(map[string]any{"op": "serverInfo", "name": "skyloop", "capabilities": []string{"time"},
		"metadata": map[string]string{}, "sessionId": strconv.FormatInt(time.Now().UnixNano(), 10)})
	s.mu.Lock()
	s.clients[c] = struct{}{}
	s.send(c, outFrame{text: true, b: info})
	if s.started {
		// A client that comes (or comes back) mid-run gets the channels
		// and the run's time now, and its latest states when it
		// subscribes; one that comes after the end is told so.
		s.send(c, outFrame{text: true, b: s.advertise()})
		s.send(c, outFrame{b: timeFrame(s.now)})
		if s.ended {
			s.send(c, outFrame{text: true, b: s.endedStatus()})
		}
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.clients, c)
		s.mu.Unlock()
	}()
	go s.writeLoop(ctx, c, cancel)
	for {
		typ, b, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageText {
			s.handle(c, b)
		}
	}
}

// writeLoop writes c's frames in order until the connection ends.
func (s *Server) writeLoop(ctx context.Context, c *client, cancel context.CancelFunc) {
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-c.out:
			typ := websocket.MessageBinary
			if f.text {
				typ = websocket.MessageText
			}
			wctx, done := context.WithTimeout(ctx, writeTimeout)
			err := c.conn.Write(wctx, typ, f.b)
			done()
			if err != nil {
				return
			}
		}
	}
}

// handle applies a client's subscribe or unsubscribe; other operations
// (this server advertises no capabilities) are ignored. A client that
// subscribes to a channel gets its latest states at once.
func (s *Server) handle(c *client, b []byte) {
	var m struct {
		Op            string `json:"op"`
		Subscriptions []struct {
			ID        uint32 `json:"id"`
			ChannelID uint16 `json:"channelId"`
		} `json:"subscriptions"`
		SubscriptionIDs []uint32 `json:"subscriptionIds"`
	}
	if json.Unmarshal(b, &m) != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m.Op {
	case "subscribe":
		for _, sub := range m.Subscriptions {
			c.subs[sub.ChannelID] = sub.ID
			if sub.ChannelID == s.batch.posCh && s.batch.posCh != 0 && s.batch.posAny {
				f := s.positionsFrame()
				s.send(c, outFrame{b: dataFrame(sub.ID, f.t, f.data)})
			}
			for k, f := range s.states {
				if k.ch == sub.ChannelID {
					s.send(c, outFrame{b: dataFrame(sub.ID, f.t, f.data)})
				}
			}
		}
	case "unsubscribe":
		for _, id := range m.SubscriptionIDs {
			for ch, sub := range c.subs {
				if sub == id {
					delete(c.subs, ch)
				}
			}
		}
	}
}
