package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ---- Queue ----

type qev struct {
	t Time
	i int // insertion index
}

func TestQueueOrderTies(t *testing.T) {
	var q Queue[int]
	if _, ok := q.PeekTime(); ok {
		t.Fatal("PeekTime on an empty queue reported an event")
	}
	times := []Time{5, 3, 5, 1, 3, 5, 0, 1, 5, 3}
	for i, tm := range times {
		q.Push(tm, i)
	}
	if q.Len() != len(times) {
		t.Fatalf("Len = %d, want %d", q.Len(), len(times))
	}
	want := []qev{{0, 6}, {1, 3}, {1, 7}, {3, 1}, {3, 4}, {3, 9}, {5, 0}, {5, 2}, {5, 5}, {5, 8}}
	for _, w := range want {
		pt, ok := q.PeekTime()
		tm, i := q.Pop()
		if !ok || pt != tm || tm != w.t || i != w.i {
			t.Fatalf("Pop = (%v, %d) peek %v, want (%v, %d)", tm, i, pt, w.t, w.i)
		}
	}
	if q.Len() != 0 {
		t.Fatalf("Len = %d after popping everything", q.Len())
	}
}

func TestQueueRandomVsStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n := r.IntN(500) + 1
		span := int64(r.IntN(20) + 1) // few distinct times: many ties
		var q Queue[int]
		ref := make([]qev, n)
		for i := range ref {
			ref[i] = qev{Time(r.Int64N(span)), i}
			q.Push(ref[i].t, i)
		}
		sort.SliceStable(ref, func(a, b int) bool { return ref[a].t < ref[b].t })
		for k, w := range ref {
			tm, i := q.Pop()
			if tm != w.t || i != w.i {
				t.Fatalf("trial %d: pop %d = (%v, %d), want (%v, %d)", trial, k, tm, i, w.t, w.i)
			}
		}
	}
}

// TestQueueRandomInterleaved mixes pushes and pops (as a backend does) and
// checks each pop against a linear-scan model keyed by (time, insertion).
func TestQueueRandomInterleaved(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var q Queue[int]
	var model []qev
	next := 0
	now := Time(0)
	for step := 0; step < 50000; step++ {
		if len(model) == 0 || r.IntN(100) < 52 {
			tm := now + Time(r.Int64N(10)) // never before the last popped time
			q.Push(tm, next)
			model = append(model, qev{tm, next})
			next++
			continue
		}
		best := 0
		for j := range model {
			if model[j].t < model[best].t || (model[j].t == model[best].t && model[j].i < model[best].i) {
				best = j
			}
		}
		w := model[best]
		model = slices.Delete(model, best, best+1)
		tm, i := q.Pop()
		if tm != w.t || i != w.i {
			t.Fatalf("step %d: Pop = (%v, %d), want (%v, %d)", step, tm, i, w.t, w.i)
		}
		now = tm
		if q.Len() != len(model) {
			t.Fatalf("Len = %d, want %d", q.Len(), len(model))
		}
	}
}

func TestQueueClearEach(t *testing.T) {
	var q Queue[*int]
	vals := make([]int, 10)
	for i := range vals {
		q.Push(Time(10-i), &vals[i])
	}
	seen := map[*int]Time{}
	q.Each(func(tm Time, e *int) { seen[e] = tm })
	if len(seen) != len(vals) {
		t.Fatalf("Each visited %d events, want %d", len(seen), len(vals))
	}
	for i := range vals {
		if seen[&vals[i]] != Time(10-i) {
			t.Errorf("Each: event %d at %v, want %v", i, seen[&vals[i]], Time(10-i))
		}
	}
	q.Clear()
	if q.Len() != 0 {
		t.Fatalf("Len after Clear = %d", q.Len())
	}
	if _, ok := q.PeekTime(); ok {
		t.Fatal("PeekTime after Clear reported an event")
	}
	// Still usable, and ordering by insertion survives Clear.
	q.Push(1, &vals[0])
	q.Push(1, &vals[1])
	if _, e := q.Pop(); e != &vals[0] {
		t.Error("after Clear, tie not popped in insertion order")
	}
}

func TestQueueNoAllocSteadyState(t *testing.T) {
	var q Queue[int]
	for i := range 1000 {
		q.Push(Time(i), i)
	}
	a := testing.AllocsPerRun(10000, func() {
		tm, e := q.Pop()
		q.Push(tm+1000, e)
	})
	if a != 0 {
		t.Errorf("push+pop with 1000 pending: %v allocs, want 0", a)
	}
}

// BenchmarkQueuePushPop: one op is a pop and a push with ~1000 events
// pending, the steady state of a busy backend.
func BenchmarkQueuePushPop(b *testing.B) {
	var q Queue[[3]uint64] // event-sized payload
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 1000 {
		q.Push(Time(r.Int64N(1e6)), [3]uint64{uint64(i)})
	}
	b.ReportAllocs()
	for b.Loop() {
		tm, e := q.Pop()
		q.Push(tm+Time(r.Int64N(1e6)), e)
	}
}

// ---- Kernel ----

func TestKernelPhasesOrderAndPeriods(t *testing.T) {
	k, err := NewKernel(10 * Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	type call struct {
		name string
		t    Time
	}
	var calls []call
	add := func(name string, every, offset int64) {
		if err := k.Add(Phase{Name: name, Every: every, Offset: offset, Run: func(tm Time) error {
			calls = append(calls, call{name, tm})
			return nil
		}}); err != nil {
			t.Fatal(err)
		}
	}
	type spec struct {
		name          string
		every, offset int64
	}
	specs := []spec{{"a", 1, 0}, {"b", 3, 0}, {"c", 10, 0}, {"d", 3, 2}, {"e", 10, 7}, {"f", 1, 4}}
	for _, s := range specs {
		add(s.name, s.every, s.offset)
	}
	const ticks = 35
	if err := k.Run(Time(ticks * 10 * Millisecond)); err != nil {
		t.Fatal(err)
	}
	var want []call
	for n := int64(0); n < ticks; n++ {
		for _, s := range specs {
			if n >= s.offset && (n-s.offset)%s.every == 0 {
				want = append(want, call{s.name, Time(n * 10 * int64(Millisecond))})
			}
		}
	}
	if !slices.Equal(calls, want) {
		t.Errorf("calls:\n%v\nwant:\n%v", calls, want)
	}
	// Spot checks written out by hand.
	ticksOf := func(name string) []int64 {
		var ns []int64
		for _, c := range calls {
			if c.name == name {
				ns = append(ns, int64(c.t)/int64(10*Millisecond))
			}
		}
		return ns
	}
	for name, w := range map[string][]int64{
		"b": {0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33},
		"c": {0, 10, 20, 30},
		"d": {2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32},
		"e": {7, 17, 27},
	} {
		if got := ticksOf(name); !slices.Equal(got, w) {
			t.Errorf("phase %s ran at ticks %v, want %v", name, got, w)
		}
	}
	if k.Now() != Time(ticks*10*Millisecond) {
		t.Errorf("Now = %v, want %v", k.Now(), Time(ticks*10*Millisecond))
	}
	// Run continues where it stopped; an end that is not on a tick runs
	// the tick that starts before it.
	calls = nil
	if err := k.Run(Time(ticks*10*Millisecond + 5*Millisecond)); err != nil {
		t.Fatal(err)
	}
	if len(calls) == 0 || calls[0].t != Time(ticks*10*Millisecond) || k.Now() != Time((ticks+1)*10*Millisecond) {
		t.Errorf("continued run: calls %v, Now %v", calls, k.Now())
	}
}

func TestKernelErrors(t *testing.T) {
	if _, err := NewKernel(0); err == nil {
		t.Error("NewKernel(0) accepted")
	}
	if _, err := NewKernel(-Millisecond); err == nil {
		t.Error("NewKernel(-1ms) accepted")
	}
	k, _ := NewKernel(Millisecond)
	nop := func(Time) error { return nil }
	for _, p := range []Phase{{Name: "zero", Every: 0, Run: nop}, {Name: "neg", Every: 1, Offset: -1, Run: nop}, {Name: "nil", Every: 1}} {
		if err := k.Add(p); err == nil {
			t.Errorf("Add(%q) accepted", p.Name)
		}
	}
	boom := errors.New("boom")
	k.Add(Phase{Name: "first", Every: 1, Run: nop})
	k.Add(Phase{Name: "bad", Every: 1, Offset: 3, Run: func(Time) error { return boom }})
	err := k.Run(Time(Second))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "bad") || !strings.Contains(err.Error(), "3ms") {
		t.Errorf("Run error = %v, want boom wrapped with the phase name and t=3ms", err)
	}
	k2, _ := NewKernel(Millisecond)
	k2.Add(Phase{Name: "stop", Every: 1, Offset: 2, Run: func(Time) error { return ErrStopped }})
	if err := k2.Run(Time(Second)); err != ErrStopped {
		t.Errorf("Run with Stop = %v, want ErrStopped itself", err)
	}
}

func TestKernelTicks(t *testing.T) {
	k, _ := NewKernel(2 * Millisecond)
	for _, c := range []struct {
		d    Duration
		want int64
	}{{2 * Millisecond, 1}, {10 * Millisecond, 5}, {Second, 500}} {
		if n, err := k.Ticks(c.d); err != nil || n != c.want {
			t.Errorf("Ticks(%v) = %d, %v; want %d", c.d, n, err, c.want)
		}
	}
	for _, d := range []Duration{0, -2 * Millisecond, Millisecond, 3 * Millisecond, 2*Millisecond + 1, 1500 * Microsecond} {
		if n, err := k.Ticks(d); err == nil {
			t.Errorf("Ticks(%v) = %d, want an error", d, n)
		}
	}
}

// ---- Pool ----

var poolSizes = []int{0, 1, 2, 3, 5, 7, 8, 9, 10, 15, 16, 17, 31, 32, 33, 47, 64, 100, 127, 128, 129, 1000, 1001}

// poolRun runs p.Run(n) and returns how often each index was covered and
// the (lo, hi) ranges fn was called with.
func poolRun(p *Pool, n int) ([]int32, [][2]int) {
	cnt := make([]atomic.Int32, n)
	var mu sync.Mutex
	var calls [][2]int
	p.Run(n, func(lo, hi int) {
		mu.Lock()
		calls = append(calls, [2]int{lo, hi})
		mu.Unlock()
		for i := max(lo, 0); i < min(hi, n); i++ {
			cnt[i].Add(1)
		}
	})
	out := make([]int32, n)
	for i := range cnt {
		out[i] = cnt[i].Load()
	}
	return out, calls
}

// forcedPool returns a pool that always runs jobs in parallel (no
// timing), so that the tests exercise the hand-off.
func forcedPool(workers int) *Pool {
	p := NewPool(workers, time.Now)
	p.tune.fixed, p.tune.par = true, true
	return p
}

func TestPoolRunCoversOnce(t *testing.T) {
	for workers := 1; workers <= 8; workers++ {
		for _, minChunk := range []int{16, 1, 0} {
			p := forcedPool(workers)
			if p.Workers() != workers {
				t.Errorf("Workers() = %d, want %d", p.Workers(), workers)
			}
			p.MinChunk = minChunk
			for _, n := range poolSizes {
				cnt, calls := poolRun(p, n)
				for i, c := range cnt {
					if c != 1 {
						t.Errorf("workers %d, MinChunk %d, n %d: index %d covered %d times (calls %v)", workers, minChunk, n, i, c, calls)
						break
					}
				}
				if len(calls) > workers*chunksPerWorker {
					t.Errorf("workers %d, n %d: %d calls, more than %d chunks per worker", workers, n, len(calls), chunksPerWorker)
				}
			}
			p.Close()
			// After Close the pool runs inline.
			sum := 0
			p.Run(100, func(lo, hi int) { sum += hi - lo })
			if sum != 100 {
				t.Errorf("Run after Close covered %d of 100", sum)
			}
		}
	}
	if p := NewPool(0, time.Now); p.Workers() != 1 {
		t.Errorf("NewPool(0, time.Now).Workers() = %d, want 1", p.Workers())
	}
}

// TestPoolRunChunkBounds checks that fn is only given ranges inside
// [0, n) with lo <= hi, so that fn may slice with them.
func TestPoolRunChunkBounds(t *testing.T) {
	var bad []string
	check := func(workers, minChunk int, sizes []int) {
		p := forcedPool(workers)
		defer p.Close()
		p.MinChunk = minChunk
		for _, n := range sizes {
			_, calls := poolRun(p, n)
			for _, c := range calls {
				if c[0] < 0 || c[1] > n || c[0] > c[1] {
					bad = append(bad, fmt.Sprintf("w=%d,min=%d,n=%d:[%d,%d)", workers, minChunk, n, c[0], c[1]))
				}
			}
		}
	}
	for workers := 1; workers <= 8; workers++ {
		check(workers, 16, poolSizes)
		check(workers, 1, poolSizes)
	}
	// More workers than the automatic maximum (a scenario may ask for
	// them), default MinChunk.
	check(32, 16, []int{512, 520, 700, 900, 1000})
	if len(bad) > 0 {
		t.Errorf("BUG: Pool.Run calls fn with lo > hi (lo beyond n) when (w-1)*ceil(n/w) > n (only possible for n < (w-1)^2) "+
			"for the w it uses: with MinChunk 1 from 4 workers, with the default MinChunk 16 from 18 workers "+
			"(e.g. 32 workers, 520 items). fn doing s[lo:hi] would panic. %d cases, e.g. %s",
			len(bad), strings.Join(bad[:min(len(bad), 6)], " "))
		for _, b := range bad {
			if strings.HasPrefix(b, "w=32") {
				t.Logf("default MinChunk case: %s", b)
			}
		}
	}
}

// ---- Stream ----

func draw(r *rand.Rand) []uint64 {
	out := make([]uint64, 16)
	for i := range out {
		out[i] = r.Uint64()
	}
	return out
}

func TestStream(t *testing.T) {
	a := draw(Stream(42, "impair", 3))
	if b := draw(Stream(42, "impair", 3)); !slices.Equal(a, b) {
		t.Error("same (seed, kind, id) gave different streams")
	}
	s1, s2 := StreamSeed(42, "impair", 3)
	if c := draw(rand.New(rand.NewPCG(s1, s2))); !slices.Equal(a, c) {
		t.Error("Stream does not match PCG(StreamSeed)")
	}
	others := map[string][]uint64{
		"seed+1":   draw(Stream(43, "impair", 3)),
		"seed 0":   draw(Stream(0, "impair", 3)),
		"kind":     draw(Stream(42, "agent", 3)),
		"kind ''":  draw(Stream(42, "", 3)),
		"id+1":     draw(Stream(42, "impair", 4)),
		"id 0":     draw(Stream(42, "impair", 0)),
		"id -1":    draw(Stream(42, "impair", -1)),
		"kind+id":  draw(Stream(42, "impair3", 0)),
		"kind2+id": draw(Stream(42, "impai", 3)),
	}
	seen := map[uint64]string{a[0]: "base"}
	for name, o := range others {
		if slices.Equal(a, o) {
			t.Errorf("stream %s equals the base stream", name)
		}
		if prev, dup := seen[o[0]]; dup {
			t.Errorf("streams %s and %s start with the same number", name, prev)
		}
		seen[o[0]] = name
	}
	// Many ids of one kind: all distinct first draws.
	firsts := map[uint64]int{}
	for id := -100; id < 10000; id++ {
		v := Stream(7, "vehicle", id).Uint64()
		if prev, dup := firsts[v]; dup {
			t.Fatalf("ids %d and %d give the same first draw", prev, id)
		}
		firsts[v] = id
	}
}

// ---- Durations ----

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Duration
	}{
		{"10ms", 10 * Millisecond},
		{"1.5s", 1500 * Millisecond},
		{"0", 0},
		{" 0 ", 0},
		{"2m", 2 * Minute},
		{"250us", 250 * Microsecond},
		{"1ns", 1},
	} {
		got, err := ParseDuration(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"10", "abc", "-", "", "1.5", "0.0", "ms", "10 ms", "10xs"} {
		if got, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, got)
		}
	}
	var d Duration
	if err := d.UnmarshalText([]byte("1.5s")); err != nil || d != 1500*Millisecond {
		t.Errorf("UnmarshalText(1.5s) = %v, %v", d, err)
	}
	if err := d.UnmarshalText([]byte("10")); err == nil {
		t.Error("UnmarshalText(10) accepted a bare number")
	}
	for _, v := range []Duration{0, 1, 1500 * Millisecond, 10 * Millisecond, 3 * Minute, 123456789} {
		b, _ := v.MarshalText()
		var back Duration
		if err := back.UnmarshalText(b); err != nil || back != v {
			t.Errorf("round trip %v -> %q -> %v, %v", v, b, back, err)
		}
	}
}

// TestPoolPanicReachesCaller: a panic in any chunk, whoever runs it, is
// re-raised in the caller, and the pool works afterwards.
func TestPoolPanicReachesCaller(t *testing.T) {
	p := forcedPool(4)
	defer p.Close()
	for round := 0; round < 50; round++ {
		bad := round % 64
		func() {
			defer func() {
				if v := recover(); v != "boom" {
					t.Fatalf("round %d: recovered %v", round, v)
				}
			}()
			p.Run(64, func(lo, hi int) {
				if lo <= bad && bad < hi {
					panic("boom")
				}
			})
			t.Fatalf("round %d: no panic", round)
		}()
		cnt, _ := poolRun(p, 64)
		for i, c := range cnt {
			if c != 1 {
				t.Fatalf("after a panic: index %d covered %d times", i, c)
			}
		}
	}
}

// TestPoolManyJobsWithSleepingHelpers: jobs handed out while helpers park
// and wake (gaps between jobs longer than their spin) all complete.
func TestPoolManyJobsWithSleepingHelpers(t *testing.T) {
	p := forcedPool(3)
	defer p.Close()
	var total atomic.Int64
	for job := 0; job < 300; job++ {
		if job%50 == 0 {
			time.Sleep(2 * time.Millisecond) // let the helpers park
		}
		p.Run(96, func(lo, hi int) { total.Add(int64(hi - lo)) })
	}
	if total.Load() != 300*96 {
		t.Fatalf("covered %d items, want %d", total.Load(), 300*96)
	}
}

// TestTunerChoosesTheFasterWay: fed periods where parallel calls take half
// as long, the tuner settles on parallel; fed the opposite, on inline; it
// re-checks, cuts a slow parallel probe short, and once parallel is kept,
// cuts short an inline probe clearly slower than the stretch it kept.
func TestTunerChoosesTheFasterWay(t *testing.T) {
	for _, c := range []struct {
		name            string
		inlineNs, parNs int64
		want            bool
	}{
		{"parallel faster", 20000, 10000, true},
		{"inline faster", 20000, 200000, false},
		{"equal", 20000, 20000, false},
	} {
		var tu tuner
		tu.reset()
		now := time.Unix(0, 0)
		var probes, parCalls, inlineCalls, cut int
		prevPar := false
		for call := 0; call < 40000; call++ {
			par := tu.parallel(now)
			if tu.stage == stageInline && tu.i == 1 {
				probes++
			}
			if tu.stage == stageInline {
				inlineCalls++ // probing
			}
			if par {
				parCalls++
				now = now.Add(time.Duration(c.parNs))
			} else {
				now = now.Add(time.Duration(c.inlineNs))
			}
			if prevPar && !par && tu.stage == stageKeep && tu.i == 1 && !tu.par && call > 0 {
				cut++
			}
			prevPar = par
		}
		if tu.par != c.want {
			t.Errorf("%s: settled on parallel=%v", c.name, tu.par)
		}
		if probes < 3 {
			t.Errorf("%s: only %d checks in 40000 calls", c.name, probes)
		}
		if !c.want && c.parNs > 2*c.inlineNs && parCalls > probes*probeRuns/2 {
			t.Errorf("%s: %d parallel calls in %d checks: slow probes not cut short", c.name, parCalls, probes)
		}
		if c.want && parCalls < 30000 {
			t.Errorf("%s: only %d of 40000 calls in parallel", c.name, parCalls)
		}
		if c.want && c.inlineNs*10 > c.parNs*13 && inlineCalls > probeRuns+1+(probes-1)*minProbe {
			t.Errorf("%s: %d inline calls in %d checks: slow inline probes not cut short", c.name, inlineCalls, probes)
		}
		if !c.want && 40000-parCalls < 30000 {
			t.Errorf("%s: only %d of 40000 calls inline", c.name, 40000-parCalls)
		}
	}
}

// BenchmarkPoolRun measures one job of 100 items of about 300 ns each (a
// multirotor swarm's vehicle phase) inline, forced parallel on 2 workers,
// and with the tuner choosing.
func BenchmarkPoolRun(b *testing.B) {
	work := make([]float64, 100)
	fn := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x := work[i]
			for k := 0; k < 100; k++ {
				x = x*0.999 + 1
			}
			work[i] = x
		}
	}
	for _, c := range []struct {
		name string
		pool func() *Pool
	}{
		{"inline", func() *Pool { return NewPool(1, time.Now) }},
		{"parallel2", func() *Pool { return forcedPool(2) }},
		{"tuned2", func() *Pool { return NewPool(2, time.Now) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := c.pool()
			defer p.Close()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				p.Run(len(work), fn)
			}
		})
	}
}

// TestPoolGoJoin: a job started with Go is covered exactly once whether
// the helpers finish it while the caller works elsewhere or the caller
// joins early and takes what is left; a panic in a chunk reaches Join.
func TestPoolGoJoin(t *testing.T) {
	for workers := 1; workers <= 4; workers++ {
		p := forcedPool(workers)
		for round := 0; round < 100; round++ {
			n := 64 + round
			cnt := make([]atomic.Int32, n)
			p.Go(n, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					cnt[i].Add(1)
				}
			})
			if round%2 == 0 {
				time.Sleep(50 * time.Microsecond) // the caller's own work
			}
			p.Join()
			for i := range cnt {
				if c := cnt[i].Load(); c != 1 {
					t.Fatalf("workers %d round %d: index %d covered %d times", workers, round, i, c)
				}
			}
		}
		func() {
			defer func() {
				if v := recover(); v != "boom" {
					t.Fatalf("workers %d: Join recovered %v, want the chunk's panic", workers, v)
				}
			}()
			p.Go(64, func(lo, hi int) {
				if lo == 0 {
					panic("boom")
				}
			})
			p.Join()
			t.Fatalf("workers %d: no panic", workers)
		}()
		p.Join() // a second Join after the job is done does nothing
		p.Close()
	}
}

// TestPoolPending: Pending is true while a job started by Go has chunks
// not finished, and false once all are done, after Join, and for a job Go
// ran inline.
func TestPoolPending(t *testing.T) {
	p := forcedPool(2)
	defer p.Close()
	release := make(chan struct{})
	var ran atomic.Int32
	// The helper takes a chunk and blocks in it until released.
	p.Go(64, func(lo, hi int) {
		if ran.Add(1) == 1 {
			<-release
		}
	})
	if !p.Pending() {
		t.Fatal("Pending is false with no chunk finished")
	}
	close(release)
	// The helper does every chunk (it takes the caller's share after its
	// own); Join is not called yet.
	for ran.Load() < 4 { // 64 items in chunks of MinChunk
		runtime.Gosched()
	}
	for p.Pending() { // the last chunk's count comes just after its body
		runtime.Gosched()
	}
	p.Join()
	if p.Pending() {
		t.Error("Pending is true after Join")
	}
	inline := forcedPool(1)
	defer inline.Close()
	inline.Go(64, func(lo, hi int) {})
	if inline.Pending() {
		t.Error("Pending is true for a job run inline")
	}
	inline.Join()
}

// TestPoolShare: Share covers every index once, on the helpers after a
// job Go ran on them and inline after one it ran inline, and the tuner
// does not count it.
func TestPoolShare(t *testing.T) {
	for _, timed := range []bool{false, true} {
		// A forced pool runs every job in parallel; a timed one starts by
		// timing jobs inline.
		p := forcedPool(2)
		if timed {
			p = NewPool(2, time.Now)
		}
		p.Run(64, func(lo, hi int) {})
		calls := p.tune.i
		var mu sync.Mutex
		goroutines := map[int64]bool{}
		cnt := make([]atomic.Int32, 100)
		p.Share(len(cnt), func(lo, hi int) {
			mu.Lock()
			goroutines[goid()] = true
			mu.Unlock()
			for i := lo; i < hi; i++ {
				cnt[i].Add(1)
				poolItem(i)
			}
		})
		for i := range cnt {
			if c := cnt[i].Load(); c != 1 {
				t.Fatalf("timed %v: index %d covered %d times", timed, i, c)
			}
		}
		if timed {
			if len(goroutines) != 1 {
				t.Errorf("after a job run inline, Share ran on %d goroutines", len(goroutines))
			}
			if p.tune.i != calls {
				t.Errorf("Share counted in the tuner: %d calls, was %d", p.tune.i, calls)
			}
		}
		p.Close()
	}
}

// goid returns the calling goroutine's id, from its stack header.
func goid() int64 {
	var buf [64]byte
	s := strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	id, _ := strconv.ParseInt(s[:strings.IndexByte(s, ' ')], 10, 64)
	return id
}

var poolSink [128]float64

// poolItem is about 150 ns of arithmetic, a vehicle's step.
func poolItem(i int) {
	x := float64(i)
	for k := 0; k < 60; k++ {
		x = math.Sqrt(x*x + 1.5)
	}
	poolSink[i&127] = x
}

// BenchmarkPoolTick is a tick of a 100-vehicle run: a job of 100 items of
// about 150 ns, then some 9 us of serial work (the network and agent
// phases) before the next job, inline and on two workers. The helpers
// must still be spinning when the next job comes for two workers to win.
func BenchmarkPoolTick(b *testing.B) {
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			p := NewPool(w, time.Now)
			p.AlwaysParallel()
			defer p.Close()
			fn := func(lo, hi int) {
				for i := lo; i < hi; i++ {
					poolItem(i)
				}
			}
			for b.Loop() {
				p.Run(100, fn)
				for i := 0; i < 30; i++ {
					poolItem(i)
				}
			}
		})
	}
}

// TestPoolTimesWithTheGivenClock: the pool's tuner and spinners read the
// clock it was given (package sim reads none itself), and a pool without
// one runs every job with enough work in parallel, covering each index
// once, and its idle helpers still park.
func TestPoolTimesWithTheGivenClock(t *testing.T) {
	var reads atomic.Int64
	clock := func() time.Time { reads.Add(1); return time.Now() }
	p := NewPool(2, clock)
	for range 3 * probeRuns {
		p.Run(64, func(lo, hi int) {})
	}
	p.Close()
	if reads.Load() < 3*probeRuns {
		t.Errorf("the pool read the given clock %d times in %d jobs", reads.Load(), 3*probeRuns)
	}

	q := NewPool(3, nil)
	defer q.Close()
	if !q.tune.fixed || !q.tune.par {
		t.Fatal("a pool without a clock does not run in parallel")
	}
	cnt, calls := poolRun(q, 1000)
	for i, c := range cnt {
		if c != 1 {
			t.Fatalf("without a clock: index %d covered %d times", i, c)
		}
	}
	if len(calls) < 2 {
		t.Errorf("without a clock: 1000 items ran in %d chunk(s), want them split", len(calls))
	}
	for _, h := range q.helpers {
		for deadline := time.Now().Add(10 * time.Second); !h.parked.Load(); {
			if time.Now().After(deadline) {
				t.Fatal("without a clock: an idle helper never parked")
			}
			runtime.Gosched()
		}
	}
}
