package sim

import "sync"

// Pool runs a function over index ranges on a fixed set of worker
// goroutines. Each call to Run splits [0, n) into contiguous chunks, one per
// worker, and returns when all are done, so callers that write only to
// per-index slots get results that do not depend on the worker count.
type Pool struct {
	workers int
	jobs    []chan job
	wg      sync.WaitGroup
	mu      sync.Mutex
	panicV  any // first panic of a helper during the current Run
	// MinChunk is the smallest range worth sending to another goroutine;
	// below 2*MinChunk items Run works inline.
	MinChunk int
}

type job struct {
	fn     func(lo, hi int)
	lo, hi int
}

// NewPool starts workers-1 helper goroutines (the caller is the first
// worker). A pool of 1 or fewer workers runs everything inline.
func NewPool(workers int) *Pool {
	if workers < 1 {
		workers = 1
	}
	p := &Pool{workers: workers, MinChunk: 16}
	for i := 1; i < workers; i++ {
		ch := make(chan job)
		p.jobs = append(p.jobs, ch)
		go func() {
			for j := range ch {
				p.runJob(j)
			}
		}()
	}
	return p
}

// runJob runs one chunk on a helper, catching a panic so that Run can
// re-raise it in the caller's goroutine (where it can be recovered).
func (p *Pool) runJob(j job) {
	defer p.wg.Done()
	defer func() {
		if v := recover(); v != nil {
			p.mu.Lock()
			if p.panicV == nil {
				p.panicV = v
			}
			p.mu.Unlock()
		}
	}()
	j.fn(j.lo, j.hi)
}

// Workers returns the number of workers, the caller included.
func (p *Pool) Workers() int { return p.workers }

// Run calls fn on chunks covering [0, n) and waits for all of them.
// fn must be safe to call concurrently on disjoint ranges.
func (p *Pool) Run(n int, fn func(lo, hi int)) {
	w := p.workers
	if max := n / max(p.MinChunk, 1); max < w {
		w = max
	}
	if w <= 1 {
		fn(0, n)
		return
	}
	// Balanced split: chunk i is [i*n/w, (i+1)*n/w), never empty or
	// out of range.
	p.wg.Add(w - 1)
	for i := 1; i < w; i++ {
		p.jobs[i-1] <- job{fn: fn, lo: i * n / w, hi: (i + 1) * n / w}
	}
	func() {
		defer p.wg.Wait() // never leave helpers running, even on a panic
		fn(0, n/w)
	}()
	if v := p.panicV; v != nil {
		p.panicV = nil
		panic(v)
	}
}

// Close stops the helper goroutines. The pool must not be used afterwards.
func (p *Pool) Close() {
	for _, ch := range p.jobs {
		close(ch)
	}
	p.jobs = nil
	p.workers = 1
}
