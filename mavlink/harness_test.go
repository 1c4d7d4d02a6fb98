package mavlink

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/frame"

	"skyloop/geom"
	"skyloop/kind/multirotor"
	"skyloop/sim"
	"skyloop/vehicle"
)

var testOrigin = geom.Geodetic{Lat: 47.397742, Lon: 8.545594, Alt: 488}

// flyer is a real multirotor (PX4-like autopilot and physics) flown at
// 1 kHz, with a MAVLink endpoint and a client joined by an in-memory link
// that can drop frames.
type flyer struct {
	t      *testing.T
	now    sim.Time
	mr     *multirotor.Multirotor
	ev     vehicle.Events
	ep     *Vehicle
	cl     *Client
	dec    *Decoder
	loss   float64
	rng    *rand.Rand
	toVeh  [][]byte // frames in flight to the vehicle (delivered next step)
	toGCS  [][]byte
	events []string
	sent   int
	lost   int
	heard  []frame.Frame // every frame the client side decoded
	// tamper, when set, may change each frame the client is about to
	// handle (a stand-in variant: a firmware's SYS_STATUS, say).
	tamper func(now sim.Time, fr frame.Frame)
}

type flyerVehHost struct{ f *flyer }

func (h flyerVehHost) Send(to Peer, b []byte) { h.f.toGCS = h.f.push(h.f.toGCS, b) }
func (h flyerVehHost) Broadcast(b []byte)     { h.f.toGCS = h.f.push(h.f.toGCS, b) }
func (h flyerVehHost) Event(name, detail string) {
	h.f.events = append(h.f.events, name+" "+detail)
}

type flyerClientHost struct{ f *flyer }

func (h flyerClientHost) Send(b []byte)             { h.f.toVeh = h.f.push(h.f.toVeh, b) }
func (h flyerClientHost) Event(name, detail string) { h.f.events = append(h.f.events, name+" "+detail) }

func (f *flyer) push(q [][]byte, b []byte) [][]byte {
	f.sent++
	if f.loss > 0 && f.rng.Float64() < f.loss {
		f.lost++
		return q
	}
	return append(q, append([]byte(nil), b...))
}

func newFlyer(t *testing.T, loss float64) *flyer {
	t.Helper()
	cfg, _ := multirotor.PresetConfig("iris")
	sh := multirotor.NewShared(&cfg)
	f := &flyer{t: t, loss: loss, rng: rand.New(rand.NewPCG(7, uint64(loss*1000)))}
	f.mr = multirotor.New(sh, geom.V(0, 0, 0), 0, sim.Stream(1, "turbulence", 0), sim.Stream(1, "sensors", 0))
	f.ep = NewVehicle(VehicleConfig{SysID: 1, Origin: testOrigin, Home: geom.V(0, 0, 0)}, f.mr, f.mr, flyerVehHost{f})
	f.cl = NewClient(255, 190, 1, testOrigin, sim.Second, common.MAV_TYPE_GCS, flyerClientHost{f})
	f.dec = NewDecoder()
	return f
}

// run advances d: the link delivers frames every 10 ms step.
func (f *flyer) run(d sim.Duration, until func() bool) bool {
	for end := f.now.Add(d); f.now < end; f.now = f.now.Add(sim.Millisecond) {
		if int64(f.now)%int64(10*sim.Millisecond) == 0 {
			in := f.toVeh
			f.toVeh = nil
			for _, b := range in {
				f.dec.Decode(b, func(fr frame.Frame) { f.ep.Handle(f.now, Peer{}, fr) })
			}
			f.ep.Step(f.now)
			out := f.toGCS
			f.toGCS = nil
			for _, b := range out {
				f.dec.Decode(b, func(fr frame.Frame) {
					f.heard = append(f.heard, fr)
					if f.tamper != nil {
						f.tamper(f.now, fr)
					}
					f.cl.Handle(f.now, fr)
				})
			}
			f.cl.Step(f.now)
			if until != nil && until() {
				return true
			}
		}
		f.mr.Control(f.now, &f.ev)
		f.mr.Step(f.now, &f.ev)
	}
	return until == nil
}

func (f *flyer) last(id uint32) frame.Frame {
	for i := len(f.heard) - 1; i >= 0; i-- {
		if f.heard[i].GetMessage().GetID() == id {
			return f.heard[i]
		}
	}
	return nil
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
