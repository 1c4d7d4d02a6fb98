package sim

import (
	"math/rand/v2"
	"testing"
)

// TestCalendarMatchesQueue drives a Calendar and a Queue with the same
// random pushes and pops (short and long delays, ties, pushes at the
// current time) and demands the same output sequence.
func TestCalendarMatchesQueue(t *testing.T) {
	for trial := 0; trial < 50; trial++ {
		rng := rand.New(rand.NewPCG(uint64(trial), 7))
		c := NewCalendar[int](10, 4) // 16 buckets of 1024 ns: plenty of wrap-around and overflow
		var q Queue[int]
		now := Time(0)
		id := 0
		for step := 0; step < 20000; step++ {
			if rng.IntN(3) > 0 || q.Len() == 0 {
				var d int64
				switch rng.IntN(5) {
				case 0:
					d = 0
				case 1:
					d = rng.Int64N(100)
				case 2:
					d = rng.Int64N(5000)
				case 3:
					d = rng.Int64N(100000)
				default:
					d = 1000 * rng.Int64N(20) // ties
				}
				c.Push(now+Time(d), id)
				q.Push(now+Time(d), id)
				id++
				continue
			}
			tq, eq := q.Pop()
			if tc, ok := c.PeekTime(); !ok || tc != tq {
				t.Fatalf("trial %d step %d: peek %v %v, queue has %v", trial, step, tc, ok, tq)
			}
			tc, ec := c.Pop()
			if tc != tq || ec != eq {
				t.Fatalf("trial %d step %d: calendar gave (%v, %d), queue (%v, %d)", trial, step, tc, ec, tq, eq)
			}
			now = tq
			if c.Len() != q.Len() {
				t.Fatalf("len %d vs %d", c.Len(), q.Len())
			}
		}
		n := 0
		c.Each(func(Time, int) { n++ })
		if n != q.Len() {
			t.Fatalf("Each saw %d of %d", n, q.Len())
		}
		for q.Len() > 0 {
			tq, eq := q.Pop()
			tc, ec := c.Pop()
			if tc != tq || ec != eq {
				t.Fatalf("drain: calendar (%v, %d), queue (%v, %d)", tc, ec, tq, eq)
			}
		}
		if _, ok := c.PeekTime(); ok || c.Len() != 0 {
			t.Fatal("calendar not empty at the end")
		}
	}
}

func BenchmarkCalendarPushPop(b *testing.B) {
	c := NewCalendar[int](20, 10)
	rng := rand.New(rand.NewPCG(1, 2))
	now := Time(0)
	for i := 0; i < 1000; i++ {
		c.Push(now+Time(rng.Int64N(10_000_000)), i)
	}
	b.ReportAllocs()
	for b.Loop() {
		t, e := c.Pop()
		now = t
		c.Push(now+Time(rng.Int64N(10_000_000)), e)
	}
}
