package sim

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool runs a function over index ranges on a fixed set of worker
// goroutines. Each call to Run splits [0, n) into contiguous chunks, one per
// worker, and returns when all are done, so callers that write only to
// per-index slots get results that do not depend on the worker count.
//
// Helpers wait for work by spinning for a short while before parking, and
// the caller spins until they finish: a tick's vehicle work is tens of
// microseconds, about what waking a parked goroutine costs, so blocking
// hand-offs would eat the gain of running in parallel.
type Pool struct {
	workers int
	// MinChunk is the smallest range worth sending to another goroutine;
	// below 2*MinChunk items Run works inline.
	MinChunk int

	gen     atomic.Uint64 // bumped by Run to hand out work
	pending atomic.Int32  // helpers still working on the current job
	closed  atomic.Bool
	fn      func(lo, hi int)
	n, w    int
	helpers []*helper

	mu     sync.Mutex
	panicV any // first panic of a helper during the current Run
}

type helper struct {
	parked atomic.Bool
	wake   chan struct{}
}

// spinLimit is how many polls a waiting goroutine makes before it parks
// (helpers) or yields (the caller); about 50-100 microseconds.
const spinLimit = 20000

// NewPool starts workers-1 helper goroutines (the caller is the first
// worker). A pool of 1 or fewer workers runs everything inline.
func NewPool(workers int) *Pool {
	if workers < 1 {
		workers = 1
	}
	p := &Pool{workers: workers, MinChunk: 16}
	for i := 1; i < workers; i++ {
		h := &helper{wake: make(chan struct{}, 1)}
		p.helpers = append(p.helpers, h)
		go p.loop(i, h)
	}
	return p
}

func (p *Pool) loop(i int, h *helper) {
	var seen uint64
	for {
		spins := 0
		for p.gen.Load() == seen {
			if p.closed.Load() {
				return
			}
			spins++
			if spins < spinLimit {
				continue
			}
			// Park until Run wakes us (re-checking after announcing it, so
			// a Run that missed the flag is seen here).
			h.parked.Store(true)
			if p.gen.Load() == seen && !p.closed.Load() {
				<-h.wake
			}
			h.parked.Store(false)
			spins = 0
		}
		seen = p.gen.Load()
		if p.closed.Load() {
			return
		}
		if i < p.w {
			p.runChunk(i)
		} else {
			p.pending.Add(-1) // no chunk for this helper in this job
		}
	}
}

// runChunk runs chunk i of the current job, catching a panic so that Run
// can re-raise it in the caller's goroutine (where it can be recovered).
func (p *Pool) runChunk(i int) {
	defer p.pending.Add(-1)
	defer func() {
		if v := recover(); v != nil {
			p.mu.Lock()
			if p.panicV == nil {
				p.panicV = v
			}
			p.mu.Unlock()
		}
	}()
	p.fn(i*p.n/p.w, (i+1)*p.n/p.w)
}

// Workers returns the number of workers, the caller included.
func (p *Pool) Workers() int { return p.workers }

// Run calls fn on chunks covering [0, n) and waits for all of them.
// fn must be safe to call concurrently on disjoint ranges. Chunk i is
// [i*n/w, (i+1)*n/w): never empty, never out of range.
func (p *Pool) Run(n int, fn func(lo, hi int)) {
	w := p.workers
	if max := n / max(p.MinChunk, 1); max < w {
		w = max
	}
	if w <= 1 {
		fn(0, n)
		return
	}
	p.fn, p.n, p.w = fn, n, w
	p.pending.Store(int32(len(p.helpers)))
	p.gen.Add(1)
	for _, h := range p.helpers {
		if h.parked.Load() {
			select {
			case h.wake <- struct{}{}:
			default:
			}
		}
	}
	func() {
		defer p.wait() // never leave helpers running, even on a panic
		fn(0, n/w)
	}()
	p.fn = nil
	if v := p.panicV; v != nil {
		p.panicV = nil
		panic(v)
	}
}

// wait spins (yielding now and then) until every helper is done.
func (p *Pool) wait() {
	for spins := 0; p.pending.Load() > 0; spins++ {
		if spins%spinLimit == spinLimit-1 {
			runtime.Gosched()
		}
	}
}

// Close stops the helper goroutines. The pool must not be used afterwards.
func (p *Pool) Close() {
	if p.closed.Swap(true) {
		return
	}
	for _, h := range p.helpers {
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
	p.helpers = nil
	p.workers = 1
}
