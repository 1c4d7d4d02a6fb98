package runner

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// rtPriority is the SCHED_FIFO priority of a real-time run's threads:
// above every ordinary process, below the kernel's own threads (50 and
// up).
const rtPriority = 10

// kernelPriority is the priority of the thread stepping the kernel: above
// the process's other threads, so that a garbage-collection worker or a
// goroutine hand-off never holds up a tick (FIFO threads of equal priority
// do not preempt each other).
const kernelPriority = 11

// realtimeThreads gives every thread of the process SCHED_FIFO priority
// for a real-time run (threads created later inherit it), so that a busy
// machine does not delay ticks by whole scheduler time slices (10 ms and
// more on two cores). All threads, not only the one stepping the kernel:
// the Go scheduler hands goroutines between threads (at every preemption,
// timer and network wake-up), and one ordinary thread in that chain brings
// the delay back. The programs in the namespaces stay ordinary. Linux's
// real-time throttling (95% of each second by default) keeps a run that
// cannot keep up from starving the machine. Without the privilege (root or
// CAP_SYS_NICE) the run goes on at normal priority. restore puts every
// thread back to normal.
func realtimeThreads() (policy string, restore func()) {
	// Reset on fork: programs started during the run (orchestrated
	// processes, their restarts, external agents) stay ordinary.
	fifo := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: rtPriority, Flags: unix.SCHED_FLAG_RESET_ON_FORK}
	if err := setAll(&fifo); err != nil {
		normal := unix.SchedAttr{Policy: unix.SCHED_NORMAL}
		setAll(&normal)
		return fmt.Sprintf("normal (SCHED_FIFO refused: %v; it needs root or CAP_SYS_NICE)", err), func() {}
	}
	runtime.LockOSThread()
	top := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: kernelPriority, Flags: unix.SCHED_FLAG_RESET_ON_FORK}
	unix.SchedSetAttr(0, &top, 0) //nolint:errcheck // permitted: the same call just succeeded for every thread
	return fmt.Sprintf("SCHED_FIFO %d (kernel thread %d)", rtPriority, kernelPriority), func() {
		normal := unix.SchedAttr{Policy: unix.SCHED_NORMAL}
		if setAll(&normal) == nil {
			runtime.UnlockOSThread()
		} // else the thread stays locked and ends with its goroutine
	}
}

// setAll applies attr to every thread of the process; threads that ended
// meanwhile are skipped.
func setAll(attr *unix.SchedAttr) error {
	// Twice: a thread may be created from one not yet changed.
	for pass := 0; pass < 2; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetAttr(tid, attr, 0); err != nil && err != unix.ESRCH {
				return err
			}
		}
	}
	return nil
}
