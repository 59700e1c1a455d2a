package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// Scheduling policies of sched_setscheduler(2).
const (
	schedOther = 0
	schedRR    = 2
)

// setRealtime puts every thread of this process in SCHED_RR at priority 1
// (on) or back in SCHED_OTHER (off). A woken real-time thread takes a core
// at once, where a woken normal one can wait out the slice of whatever
// holds the core, even a nice-19 process: milliseconds that the latency
// bounds cannot tell from the adapter's own. Ours and raw share the
// process, so both are measured under the same policy. Linux sets the
// policy per thread, and a new thread inherits its creator's, so it passes
// over the threads until a pass finds none to change. It needs root (or
// CAP_SYS_NICE, or an RLIMIT_RTPRIO above 0).
func setRealtime(on bool) error {
	policy, prio := schedOther, int32(0)
	if on {
		policy, prio = schedRR, 1
	}
	for range 10 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		changed := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			now, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, uintptr(tid), 0, 0)
			if errno == syscall.ESRCH {
				continue // the thread ended
			}
			if errno == 0 && int(now) == policy {
				continue
			}
			_, _, errno = syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(tid), uintptr(policy), uintptr(unsafe.Pointer(&prio)))
			switch {
			case errno == syscall.ESRCH:
			case errno == syscall.EPERM:
				return fmt.Errorf("real-time priority needs root or CAP_SYS_NICE: %w", errno)
			case errno != 0:
				return errno
			default:
				changed = true
			}
		}
		if !changed {
			return nil
		}
	}
	return errors.New("threads kept starting while their scheduling policy was set")
}
