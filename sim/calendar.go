package sim

import "slices"

// Calendar is a priority queue of events with the same contract as Queue
// (time order, FIFO among equal times) built for dense near-future traffic:
// a ring of time buckets ("calendar queue") holds the events of the next
// Buckets*2^Shift nanoseconds, each bucket sorted only when time reaches
// it, and a heap holds the rest. For the many short-delay events of a
// network model this costs O(1) per push and a small sort per bucket,
// instead of two O(log n) heap operations per event.
//
// Events may not be pushed earlier than the last popped time.
type Calendar[E any] struct {
	shift   uint
	mask    int64
	buckets [][]calItem[E]
	cur     int64 // index (time >> shift) of the current bucket
	sorted  bool  // the current bucket is sorted from pos on
	pos     int   // read position in the current bucket
	inWheel int   // events in buckets
	far     Queue[calItem[E]]
	seq     uint64
	spare   [][]calItem[E] // storage of used-up buckets, for reuse
}

type calItem[E any] struct {
	t   Time
	seq uint64
	e   E
}

// NewCalendar returns a calendar with 2^bucketsLog2 buckets of 2^shift ns.
func NewCalendar[E any](shift uint, bucketsLog2 uint) *Calendar[E] {
	n := 1 << bucketsLog2
	return &Calendar[E]{shift: shift, mask: int64(n - 1), buckets: make([][]calItem[E], n)}
}

// Len returns the number of queued events.
func (c *Calendar[E]) Len() int { return c.inWheel + c.far.Len() }

func (c *Calendar[E]) horizon() int64 { return c.cur + c.mask + 1 } // first bucket index beyond the wheel

// Push adds event e at time t.
func (c *Calendar[E]) Push(t Time, e E) {
	it := calItem[E]{t: t, seq: c.seq, e: e}
	c.seq++
	b := int64(t) >> c.shift
	if b < c.cur {
		b = c.cur // never behind the wheel: a late push joins the current bucket
	}
	if b >= c.horizon() {
		c.far.Push(t, it)
		return
	}
	i := b & c.mask
	c.inWheel++
	if b == c.cur && c.sorted {
		// Keep the unread part of the current bucket sorted.
		bk := c.buckets[i]
		j := len(bk)
		for j > c.pos && less(it, bk[j-1]) {
			j--
		}
		c.buckets[i] = slices.Insert(bk, j, it)
		return
	}
	c.buckets[i] = append(c.bucket(i), it)
}

// bucket returns bucket i, giving an empty one storage from a used-up
// bucket, so that only as many arrays exist as buckets are in use.
func (c *Calendar[E]) bucket(i int64) []calItem[E] {
	bk := c.buckets[i]
	if cap(bk) == 0 {
		if n := len(c.spare); n > 0 {
			bk = c.spare[n-1]
			c.spare = c.spare[:n-1]
		}
	}
	return bk
}

func less[E any](a, b calItem[E]) bool { return a.t < b.t || (a.t == b.t && a.seq < b.seq) }

// advance makes the current bucket the first non-empty one, sorted; it
// returns false when the calendar is empty.
func (c *Calendar[E]) advance() bool {
	for {
		i := c.cur & c.mask
		bk := c.buckets[i]
		if c.pos < len(bk) {
			if !c.sorted {
				slices.SortFunc(bk[c.pos:], func(a, b calItem[E]) int {
					if less(a, b) {
						return -1
					}
					if less(b, a) {
						return 1
					}
					return 0
				})
				c.sorted = true
			}
			return true
		}
		// The current bucket is used up: recycle its storage and move on.
		if cap(bk) > 0 {
			clear(bk)
			c.spare = append(c.spare, bk[:0])
			c.buckets[i] = nil
		}
		c.pos, c.sorted = 0, false
		if c.inWheel == 0 {
			if c.far.Len() == 0 {
				return false
			}
			t, _ := c.far.PeekTime()
			c.cur = int64(t) >> c.shift // jump over the empty stretch
		} else {
			c.cur++
		}
		// Events that are now within the wheel's horizon join their bucket.
		for c.far.Len() > 0 {
			t, _ := c.far.PeekTime()
			b := int64(t) >> c.shift
			if b >= c.horizon() {
				break
			}
			_, it := c.far.Pop()
			j := b & c.mask
			c.buckets[j] = append(c.bucket(j), it)
			c.inWheel++
		}
	}
}

// PeekTime returns the time of the earliest event; ok is false when the
// calendar is empty.
func (c *Calendar[E]) PeekTime() (Time, bool) {
	if !c.advance() {
		return 0, false
	}
	return c.buckets[c.cur&c.mask][c.pos].t, true
}

// Pop removes and returns the earliest event. It must not be called on an
// empty calendar.
func (c *Calendar[E]) Pop() (Time, E) {
	c.advance()
	bk := c.buckets[c.cur&c.mask]
	it := bk[c.pos]
	var zero calItem[E]
	bk[c.pos] = zero
	c.pos++
	c.inWheel--
	return it.t, it.e
}

// Each calls f for every queued event in no particular order.
func (c *Calendar[E]) Each(f func(t Time, e E)) {
	for i, bk := range c.buckets {
		from := 0
		if int64(i) == c.cur&c.mask {
			from = c.pos
		}
		for _, it := range bk[from:] {
			f(it.t, it.e)
		}
	}
	c.far.Each(func(t Time, it calItem[E]) { f(t, it.e) })
}

// Clear removes every event, keeping the storage.
func (c *Calendar[E]) Clear() {
	for i := range c.buckets {
		clear(c.buckets[i])
		c.buckets[i] = c.buckets[i][:0]
	}
	c.far.Clear()
	c.pos, c.sorted, c.inWheel = 0, false, 0
}
