package sim

import (
	"sync"
	"sync/atomic"
	"time"
)

// Pool runs a function over index ranges on a fixed set of worker
// goroutines. Each call to Run splits [0, n) into contiguous chunks that
// the caller and the helpers claim one at a time, and returns when all are
// done, so callers that write only to per-index slots get results that do
// not depend on the worker count, the chunking, or who ran what.
//
// Each worker has its share of the chunks, the same items at every call
// (their data stays in its core's cache), and takes what is left of the
// others' shares when done with its own: a helper that is slow to wake
// (the machine is busy) costs nothing, the caller does its chunks. Helpers
// that find no work spin for a few tens of microseconds (a tick's work
// comes that often in a fast run) and then park; a caller waiting for a
// helper's last chunk does the same.
//
// Whether running in parallel pays depends on the work per call and on
// what else the machine is doing, which change during a run. The pool
// measures it: now and then it runs a stretch of calls inline and a
// stretch in parallel, timing the whole period from one call to the next
// (so the cost a spinning helper inflicts on the caller's other work is
// counted), and keeps the faster way until the next check. The wall clock
// (a WallClock the edge that runs the pool gives it: package sim reads no
// clock itself) decides only who executes a chunk, never what a chunk
// computes.
type Pool struct {
	workers int
	now     WallClock // nil: no timing (see NewPool)
	// MinChunk is the smallest range worth sending to another goroutine;
	// below 2*MinChunk items Run works inline.
	MinChunk int

	// The current job: fn, n and chunks are written before the job is
	// published, and read only by whoever claimed one of its chunks (so
	// they cannot change before that chunk is done).
	fn        func(lo, hi int)
	n, chunks int
	left      atomic.Int64  // chunks of the current job not yet finished
	gen       atomic.Uint32 // the current job's generation
	// shares holds each worker's share of the job's chunks. A worker
	// works through its own share first (the same items every call, so
	// their data stays in its core's cache), then takes what is left of
	// the others'.
	shares []share

	closed  atomic.Bool
	helpers []*helper
	caller  parker

	mu     sync.Mutex
	panicV any // first panic of a chunk during the current Run

	started bool // Go published a job that Join has not finished
	lastPar bool // the last job Go started ran on the helpers

	tune tuner
}

// parker lets a goroutine sleep until another wakes it, without losing a
// wake-up that comes between its last check and its sleep.
type parker struct {
	parked atomic.Bool
	wake   chan struct{}
}

func newParker() parker { return parker{wake: make(chan struct{}, 1)} }

// park sleeps unless cond turned false meanwhile; spurious returns are
// possible, so callers loop.
func (k *parker) park(cond func() bool) {
	k.parked.Store(true)
	if cond() {
		<-k.wake
	}
	k.parked.Store(false)
}

// unpark wakes the goroutine if it sleeps (or is about to).
func (k *parker) unpark() {
	if k.parked.Load() {
		select {
		case k.wake <- struct{}{}:
		default:
		}
	}
}

type helper struct {
	parker
	idx int // the helper's share
}

// share is one worker's range of chunks. word packs the job's generation
// (high 32 bits), the next chunk to claim (16 bits) and the end of the
// range (low 16 bits): a goroutine late from an earlier job can never
// claim a chunk of a newer one. Padded to its own cache line.
type share struct {
	word atomic.Uint64
	_    [56]byte
}

// claim takes the next chunk of share sh for job g, or returns -1.
func (sh *share) claim(g uint32) int {
	for {
		v := sh.word.Load()
		next, end := int(v>>16&0xffff), int(v&0xffff)
		if uint32(v>>32) != g || next >= end {
			return -1
		}
		if sh.word.CompareAndSwap(v, v+1<<16) {
			return next
		}
	}
}

// Spin budgets: how long an idle helper, and the caller waiting for the
// last chunks, poll before they park. A helper must outlast the serial
// phases between two jobs (the network and the agents: tens of
// microseconds in a swarm run), or it parks every tick and waking it
// (tens of microseconds in a virtual machine) costs more than its share
// of the work: a budget counted in polls (a poll takes under a
// nanosecond) was too short for that. When parallel runs do not pay (a
// busy machine), the tuner stops using the helpers.
const (
	helperSpin = 200 * time.Microsecond
	callerSpin = 50 * time.Microsecond
	// spinCheck is how many polls pass between two clock reads.
	spinCheck = 256
)

// WallClock returns the current wall-clock time, with its monotonic
// reading: time.Now, passed in by the edge that runs a pool (the runner).
// A pool uses it only to time its jobs and to bound its spinning, never
// for what a job computes.
type WallClock func() time.Time

// spinner tells a polling loop when its budget is spent, reading the
// clock only every spinCheck polls.
type spinner struct {
	polls int
	until time.Time
}

// spent reports whether budget has passed since the first call after a
// reset, by clock; without a clock, a poll counts as a nanosecond.
func (s *spinner) spent(budget time.Duration, clock WallClock) bool {
	s.polls++
	if s.polls%spinCheck != 0 {
		return false
	}
	if clock == nil {
		return s.polls >= int(budget)
	}
	now := clock()
	if s.until.IsZero() {
		s.until = now.Add(budget)
		return false
	}
	return now.After(s.until)
}

func (s *spinner) reset() { *s = spinner{} }

// chunksPerWorker splits the work finer than one chunk per worker, so
// that the caller can take over the share of a helper that is late.
const chunksPerWorker = 16

// NewPool starts workers-1 helper goroutines (the caller is the first
// worker). A pool of 1 or fewer workers runs everything inline. now is the
// wall clock the pool times its jobs with (time.Now, from the edge); with
// nil, the pool does not time: it runs every job with enough work in
// parallel (as AlwaysParallel) and counts its spin budgets in polls.
func NewPool(workers int, now WallClock) *Pool {
	if workers < 1 {
		workers = 1
	}
	p := &Pool{workers: workers, now: now, MinChunk: 16, caller: newParker(), shares: make([]share, workers)}
	p.tune.reset()
	if now == nil {
		p.AlwaysParallel()
	}
	for i := 1; i < workers; i++ {
		h := &helper{parker: newParker(), idx: i}
		p.helpers = append(p.helpers, h)
		go p.loop(h)
	}
	return p
}

func (p *Pool) loop(h *helper) {
	var seen uint32
	for {
		var sp spinner
		for p.gen.Load() == seen {
			if p.closed.Load() {
				return
			}
			if sp.spent(helperSpin, p.now) {
				h.park(func() bool { return p.gen.Load() == seen && !p.closed.Load() })
				sp.reset()
			}
		}
		if p.closed.Load() {
			return
		}
		seen = p.gen.Load()
		p.work(seen, h.idx)
	}
}

// work runs chunks of job g: those of share self first, then what is left
// of the others', until none is left (or a newer job has replaced g).
func (p *Pool) work(g uint32, self int) {
	for k := range p.shares {
		sh := &p.shares[(self+k)%len(p.shares)]
		for c := sh.claim(g); c >= 0; c = sh.claim(g) {
			p.runChunk(c)
			if p.left.Add(-1) == 0 {
				p.caller.unpark()
			}
		}
	}
}

// runChunk runs chunk c of the current job, catching a panic so that Run
// can re-raise it in the caller's goroutine (where it can be recovered).
func (p *Pool) runChunk(c int) {
	defer func() {
		if v := recover(); v != nil {
			p.mu.Lock()
			if p.panicV == nil {
				p.panicV = v
			}
			p.mu.Unlock()
		}
	}()
	p.fn(c*p.n/p.chunks, (c+1)*p.n/p.chunks)
}

// AlwaysParallel makes every job with enough work run on all workers,
// without timing (tests of determinism use it).
func (p *Pool) AlwaysParallel() { p.tune.fixed, p.tune.par = true, true }

// Workers returns the number of workers, the caller included.
func (p *Pool) Workers() int { return p.workers }

// Run calls fn on chunks covering [0, n) and waits for all of them.
// fn must be safe to call concurrently on disjoint ranges. Chunks are
// contiguous, never empty and never out of range.
func (p *Pool) Run(n int, fn func(lo, hi int)) {
	p.Go(n, fn)
	p.Join()
}

// Go starts fn on chunks covering [0, n) and returns without waiting, so
// that the caller can do other work (which must not touch what fn
// touches) while the helpers run the chunks; Join then runs what is left
// and waits. When the pool runs the job inline (one worker, too little
// work, or the tuner found that parallel runs do not pay), Go runs all of
// it before returning. Every Go must be followed by Join before the next
// Go or Run.
func (p *Pool) Go(n int, fn func(lo, hi int)) {
	p.lastPar = false
	w := p.width(n)
	if w <= 1 {
		fn(0, n)
		return
	}
	var now time.Time
	if !p.tune.fixed {
		now = p.now()
	}
	if !p.tune.parallel(now) {
		fn(0, n)
		return
	}
	p.publish(n, w, fn)
}

// Share runs fn on chunks covering [0, n) like Run, on the helpers only
// when the last job Go started ran on them (they are awake, and the tuner
// found that parallel runs pay), else inline; it neither times the job
// nor counts it in the tuner's checks. It is for a second, smaller job
// in the same period as a timed one. Like Run, it must not come between a
// Go and its Join.
func (p *Pool) Share(n int, fn func(lo, hi int)) {
	w := p.width(n)
	if !p.lastPar || w <= 1 {
		fn(0, n)
		return
	}
	p.publish(n, w, fn)
	p.Join()
}

// width returns how many workers a job of n items is worth: at most one
// per MinChunk items.
func (p *Pool) width(n int) int {
	return min(p.workers, n/max(p.MinChunk, 1))
}

// publish hands the job fn over [0, n) to w workers.
func (p *Pool) publish(n, w int, fn func(lo, hi int)) {
	p.lastPar = true
	chunks := min(w*chunksPerWorker, n/max(p.MinChunk, 1), 0xffff)
	p.fn, p.n, p.chunks = fn, n, chunks
	p.left.Store(int64(chunks))
	g := p.gen.Load() + 1
	for i := range p.shares {
		lo, hi := 0, 0 // workers beyond w get nothing of their own
		if i < w {
			lo, hi = i*chunks/w, (i+1)*chunks/w
		}
		p.shares[i].word.Store(uint64(g)<<32 | uint64(lo)<<16 | uint64(hi))
	}
	p.gen.Store(g)
	for _, h := range p.helpers {
		h.unpark()
	}
	p.started = true
}

// Pending reports whether the job started by Go has chunks not finished
// yet (untaken, or running on a worker): the caller has time for other
// work before Join returns. It is false when Go ran the job inline, and
// after Join.
func (p *Pool) Pending() bool {
	return p.started && p.left.Load() > 0
}

// Join runs the chunks of the job started by Go that no helper has
// claimed yet and waits until all are done; it re-raises, in the caller's
// goroutine, the first panic of a chunk. It returns at once when Go ran
// the job inline.
func (p *Pool) Join() {
	if !p.started {
		return
	}
	p.started = false
	func() {
		defer p.wait() // never leave helpers running, even on a panic
		p.work(p.gen.Load(), 0)
	}()
	p.fn = nil
	if v := p.panicV; v != nil {
		p.panicV = nil
		panic(v)
	}
}

// wait returns when every chunk is done: it spins briefly, then sleeps
// until the helper with the last chunk wakes it.
func (p *Pool) wait() {
	var sp spinner
	for p.left.Load() > 0 {
		if sp.spent(callerSpin, p.now) {
			p.caller.park(func() bool { return p.left.Load() > 0 })
		}
	}
}

// Close stops the helper goroutines. The pool must not be used afterwards.
func (p *Pool) Close() {
	if p.closed.Swap(true) {
		return
	}
	for _, h := range p.helpers {
		h.parked.Store(true) // make unpark deliver
		h.unpark()
	}
	p.helpers = nil
	p.workers = 1
}

// tuner chooses between running a pool's jobs inline and in parallel by
// timing both now and then. Each check runs probeRuns calls one way, then
// probeRuns the other (stopping early once it is clearly slower), and
// keeps the faster way for a stretch of calls that doubles while the
// choice holds. The time of a call is the period from its start to the
// next call's start: everything the way of running costs, the caller's
// other work included. While parallel is kept, the stretch's own calls
// time it: a check whose inline probe is clearly slower than that stops
// there, and parallel is kept without probing it again (in a large swarm
// an inline call costs twice a parallel one, and a full check 64 of them).
type tuner struct {
	stage   int   // stageInline, stageParallel or stageKeep
	i       int   // calls made in the stage
	ns      int64 // periods measured in the stage
	inline  int64 // the inline probe's total
	stretch int   // length of the keep stage
	par     bool  // the way kept in the keep stage
	decided bool  // an earlier check chose par
	fixed   bool  // tests: always par, no timing
	// parNs and parN are the periods of the last stretch kept parallel
	// and their count (0: none since the last full check).
	parNs int64
	parN  int
	last  time.Time
}

const (
	stageInline = iota
	stageParallel
	stageKeep

	probeRuns  = 64
	minProbe   = 8 // calls an inline probe runs before it may stop early
	minStretch = 256
	maxStretch = 16384
)

func (t *tuner) reset() { *t = tuner{stage: stageInline, stretch: minStretch} }

func (t *tuner) start(stage int) { t.stage, t.i, t.ns = stage, 0, 0 }

// parallel accounts the period since the previous call to the stage it ran
// in (a stage's first call belongs to the previous stage's period, so it
// is not counted) and says how to run this call.
func (t *tuner) parallel(now time.Time) bool {
	if t.fixed {
		return t.par
	}
	if t.i > 0 {
		t.ns += int64(now.Sub(t.last))
	}
	t.last = now
	switch t.stage {
	case stageInline:
		if t.i > probeRuns {
			t.inline = t.ns
			t.start(stageParallel)
		} else if t.parN > 0 && t.i >= minProbe && t.ns*int64(t.parN)*10 > t.parNs*int64(t.i)*13 {
			// Clearly slower than the stretch just kept parallel.
			t.stretch = min(t.stretch*2, maxStretch)
			t.parN = 0
			t.start(stageKeep)
		}
	case stageParallel:
		done := t.i > probeRuns
		if done || t.ns*10 > t.inline*13 { // finished, or clearly slower already
			choice := done && t.ns*100 < t.inline*95 // parallel must win clearly
			if t.decided && choice == t.par {
				t.stretch = min(t.stretch*2, maxStretch)
			} else {
				t.stretch = minStretch
			}
			t.decided, t.par = true, choice
			t.start(stageKeep)
		}
	default:
		if t.i >= t.stretch {
			t.parNs, t.parN = 0, 0
			if t.par {
				t.parNs, t.parN = t.ns, t.i
			}
			t.start(stageInline)
		}
	}
	t.i++
	switch t.stage {
	case stageInline:
		return false
	case stageParallel:
		return true
	}
	return t.par
}
