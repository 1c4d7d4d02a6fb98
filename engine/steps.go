package engine

// dueSlot is one behaviour slot in the agent phase's timetable: the tick
// index of its next step, its node and its place in the node's stack.
type dueSlot struct {
	next       int64
	node, slot int32
}

// before orders slots as the agent phase steps them: by tick, then node,
// then stack order.
func (a dueSlot) before(b dueSlot) bool {
	if a.next != b.next {
		return a.next < b.next
	}
	if a.node != b.node {
		return a.node < b.node
	}
	return a.slot < b.slot
}

// stepQueue is the agent phase's timetable: a binary min-heap of the
// slots that step, by (tick, node, slot). The agent phase takes the slots
// due at a tick from it in the order a scan of every node's every slot
// would visit them, without the scan: in a swarm of thousands most
// behaviours sleep most ticks (a beacon steps once per period), and
// visiting each one's slot every tick cost a cache miss per node.
type stepQueue struct {
	h   []dueSlot
	due []dueSlot // take's result, reused
}

// push adds a slot to the timetable.
func (q *stepQueue) push(d dueSlot) {
	q.h = append(q.h, d)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.h[i].before(q.h[p]) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

// pop removes and returns the first slot of the timetable, which must not
// be empty.
func (q *stepQueue) pop() dueSlot {
	top := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h = q.h[:last]
	i := 0
	for {
		l, m := 2*i+1, i
		if l < last && q.h[l].before(q.h[m]) {
			m = l
		}
		if r := l + 1; r < last && q.h[r].before(q.h[m]) {
			m = r
		}
		if m == i {
			return top
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
}

// take removes the slots due at tick idx and returns them in stepping
// order (valid until the next take). Slots whose tick has passed without
// a step are dropped: the agent phase steps a slot only at the tick it
// names, and such a slot never stepped again before either.
func (q *stepQueue) take(idx int64) []dueSlot {
	q.due = q.due[:0]
	for len(q.h) > 0 && q.h[0].next <= idx {
		if d := q.pop(); d.next == idx {
			q.due = append(q.due, d)
		}
	}
	return q.due
}
