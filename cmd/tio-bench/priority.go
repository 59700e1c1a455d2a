package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
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

// wakefulEnv marks a child process started by keepCPUsAwake.
const wakefulEnv = "TIO_BENCH_WAKEFUL"

const schedIdle = 5

// spinIfWakeful, in a child started by keepCPUsAwake, spins at SCHED_IDLE
// until killed: below every other thread on the host, it runs only where a
// core would otherwise halt. Elsewhere it returns at once.
func spinIfWakeful() {
	if os.Getenv(wakefulEnv) == "" {
		return
	}
	runtime.GOMAXPROCS(1)
	var prio int32
	if _, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, schedIdle, uintptr(unsafe.Pointer(&prio))); errno != 0 {
		os.Exit(1) // spinning at normal priority would take cores from the measurement
	}
	for {
	}
}

// wakeful holds the spinners of the latency mode, none outside it.
var wakeful []*exec.Cmd

// keepCPUsAwake starts one SCHED_IDLE spinner per core. On a virtual
// machine a halted core is woken through the hypervisor, which can take a
// host scheduling tick: idle, this host's raw nats.go baseline measured a
// p99 of 3.4–4.7 ms at 10 k/s, beside two nice-19 busy loops 0.16–0.47 ms.
// Ours and raw share the process, so both are measured with the cores awake.
func keepCPUsAwake() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	for range runtime.NumCPU() {
		c := exec.Command(exe)
		c.Env = append(os.Environ(), wakefulEnv+"=1")
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the bench
		if err := c.Start(); err != nil {
			letCPUsIdle()
			return err
		}
		wakeful = append(wakeful, c)
	}
	return nil
}

// letCPUsIdle stops the spinners.
func letCPUsIdle() {
	for _, c := range wakeful {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	wakeful = nil
}

// setLatencyMode enters (on) or leaves the conditions -realtime measures
// the latency figures in: every thread at SCHED_RR 1 and every core kept
// awake.
func setLatencyMode(on bool) error {
	if err := setRealtime(on); err != nil {
		return err
	}
	if !on {
		letCPUsIdle()
		return nil
	}
	if wakeful != nil {
		return nil
	}
	return keepCPUsAwake()
}
