package main

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// policies counts this process's threads by scheduling policy.
func policies(t *testing.T) map[int]int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	n := map[int]int{}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		p, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, uintptr(tid), 0, 0)
		if errno == 0 {
			n[int(p)]++
		}
	}
	return n
}

// holdThreads keeps n goroutines on threads of their own until release is
// closed, so the process has threads that started after the switch.
func holdThreads(n int, release chan struct{}) *sync.WaitGroup {
	var started, done sync.WaitGroup
	started.Add(n)
	done.Add(n)
	for range n {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			started.Done()
			<-release
		}()
	}
	started.Wait()
	return &done
}

// -realtime moves every thread of the process to SCHED_RR, threads started
// after the switch inherit it, and it moves them all back; without the
// privilege it names what is missing.
func TestRealtimeSwitchesEveryThreadAndBack(t *testing.T) {
	err := setRealtime(true)
	if os.Geteuid() != 0 {
		if err == nil || !strings.Contains(err.Error(), "needs root or CAP_SYS_NICE") {
			t.Fatalf("setRealtime(true) as uid %d = %v, want the missing privilege named", os.Geteuid(), err)
		}
		return
	}
	if err != nil {
		t.Fatalf("setRealtime(true) as root: %v", err)
	}
	before := policies(t)[schedRR]
	release := make(chan struct{})
	done := holdThreads(runtime.GOMAXPROCS(0)+4, release) // more threads than the process had
	if got := policies(t); got[schedOther] != 0 || got[schedRR] <= before {
		t.Errorf("threads started after setRealtime(true), by policy: %v (SCHED_RR before: %d), want all SCHED_RR (%d)", got, before, schedRR)
	}
	if err := setRealtime(false); err != nil {
		t.Fatal(err)
	}
	if got := policies(t); got[schedRR] != 0 || got[schedOther] == 0 {
		t.Errorf("after setRealtime(false): threads by policy %v, want all SCHED_OTHER (%d)", got, schedOther)
	}
	close(release)
	done.Wait()
}

// The latency mode keeps one SCHED_IDLE spinner per core running while it
// lasts, and none after.
func TestLatencyModeKeepsEveryCoreAwakeAtIdlePriority(t *testing.T) {
	err := setLatencyMode(true)
	if os.Geteuid() != 0 {
		if err == nil || len(wakeful) != 0 {
			t.Fatalf("setLatencyMode(true) as uid %d = %v with %d spinners, want the refusal and none", os.Geteuid(), err, len(wakeful))
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	pids := wakefulPids(t)
	if len(pids) != runtime.NumCPU() {
		t.Errorf("%d spinners running, want one per core (%d)", len(pids), runtime.NumCPU())
	}
	for _, pid := range pids {
		if p, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, uintptr(pid), 0, 0); errno != 0 || int(p) != schedIdle {
			t.Errorf("spinner %d: policy %d (errno %v), want SCHED_IDLE (%d)", pid, p, errno, schedIdle)
		}
	}
	if err := setLatencyMode(false); err != nil {
		t.Fatal(err)
	}
	if len(wakeful) != 0 {
		t.Errorf("%d spinners kept after the latency mode ended", len(wakeful))
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("spinner %d still running after the latency mode ended", pid)
		}
	}
}

// wakefulPids lists the spinners of the latency mode, waiting for each to
// set its own policy.
func wakefulPids(t *testing.T) []int {
	t.Helper()
	var pids []int
	for _, c := range wakeful {
		pid := c.Process.Pid
		for range 200 {
			p, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, uintptr(pid), 0, 0)
			if errno != 0 || int(p) == schedIdle {
				break
			}
			time.Sleep(5 * time.Millisecond) // the child sets its own policy once started
		}
		pids = append(pids, pid)
	}
	return pids
}
