package sim

// Queue is a priority queue of typed events keyed by (time, insertion
// sequence): events come out in time order, and events at the same time in
// the order they were pushed. It is a binary heap over a slice, so pushes
// and pops do not allocate once the slice has grown to the run's peak size.
type Queue[E any] struct {
	items []queueItem[E]
	seq   uint64
}

type queueItem[E any] struct {
	t   Time
	seq uint64
	e   E
}

func (q *Queue[E]) less(i, j int) bool {
	a, b := &q.items[i], &q.items[j]
	return a.t < b.t || (a.t == b.t && a.seq < b.seq)
}

// Len returns the number of queued events.
func (q *Queue[E]) Len() int { return len(q.items) }

// Push adds event e at time t.
func (q *Queue[E]) Push(t Time, e E) {
	q.items = append(q.items, queueItem[E]{t: t, seq: q.seq, e: e})
	q.seq++
	// sift up
	i := len(q.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

// PeekTime returns the time of the earliest event; ok is false when the
// queue is empty.
func (q *Queue[E]) PeekTime() (t Time, ok bool) {
	if len(q.items) == 0 {
		return 0, false
	}
	return q.items[0].t, true
}

// Pop removes and returns the earliest event and its time. It must not be
// called on an empty queue.
func (q *Queue[E]) Pop() (Time, E) {
	top := q.items[0]
	n := len(q.items) - 1
	q.items[0] = q.items[n]
	var zero queueItem[E]
	q.items[n] = zero // drop references held by the moved slot
	q.items = q.items[:n]
	// sift down
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q.less(r, l) {
			m = r
		}
		if !q.less(m, i) {
			break
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
	return top.t, top.e
}

// Clear removes every event, keeping the storage.
func (q *Queue[E]) Clear() {
	clear(q.items)
	q.items = q.items[:0]
}

// Each calls f for every queued event in no particular order; backends use
// it to release resources at Close.
func (q *Queue[E]) Each(f func(t Time, e E)) {
	for i := range q.items {
		f(q.items[i].t, q.items[i].e)
	}
}
