package mcp

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// reaper is the sh script a command runs under on Linux. The kernel sends
// it SIGHUP when the thread that started it ends (the parent-death signal,
// set by prepare): the whole process group is killed then, what the
// command started included, which a death signal on the command alone
// would leave running (npx leaves node). Until then it waits for the
// command, whose exit status it exits with; SIGTERM and SIGINT only
// interrupt its wait, so that the command ends on its own terms when the
// group is terminated. The command reads the reaper's standard input
// (saved as fd 3: an asynchronous command's input is /dev/null
// otherwise); as a background job it ignores SIGINT and SIGQUIT, which
// nothing sends to its group.
const reaper = `exec 3<&0
trap 'kill -KILL 0' HUP
trap 'sig=1' TERM INT
"$@" <&3 3<&- &
pid=$!
while :; do sig=; wait "$pid"; s=$?; [ -z "$sig" ] && exit "$s"; done`

const shell = "/bin/sh"

// prepare runs cmd in a process group of its own, under the reaper, with
// the parent-death signal; without /bin/sh it runs the command itself with
// SIGKILL as its death signal, which ends the command but not what it
// started.
func prepare(cmd *exec.Cmd) error {
	if cmd.Err != nil {
		return cmd.Err
	}
	if filepath.Base(cmd.Path) != cmd.Path {
		// Start would check it: the reaper would only say "not found".
		path := cmd.Path
		if !filepath.IsAbs(path) && cmd.Dir != "" {
			path = filepath.Join(cmd.Dir, path)
		}
		if _, err := exec.LookPath(path); err != nil {
			return err
		}
	}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if _, err := os.Stat(shell); err == nil {
		cmd.Args = append([]string{shell, "-c", reaper, "cairn-mcp", cmd.Path}, cmd.Args[1:]...)
		cmd.Path = shell
		attr.Pdeathsig = syscall.SIGHUP
	}
	cmd.SysProcAttr = attr
	return nil
}

// The parent-death signal comes when the *thread* that started the child
// ends, not the process, and the Go runtime ends a thread when a goroutine
// locked to it exits. So every command starts on one thread that stays
// for the life of the process: a goroutine that locks it and never
// returns, so that no other goroutine ever runs, or exits, on it.
var spawner struct {
	once sync.Once
	reqs chan func()
}

// start starts cmd on the spawner's thread.
func start(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		// A process started with SIGHUP ignored (under nohup) passes
		// that on to its children, and a shell cannot trap a signal
		// ignored on entry: the reaper would never hear of this
		// process's death. Caught here and dropped, it stays as harmless
		// to this process, and children start with the default.
		if signal.Ignored(syscall.SIGHUP) {
			signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
		}
		spawner.reqs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for f := range spawner.reqs {
				f()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.reqs <- func() { done <- cmd.Start() }
	return <-done
}

// exitedUnreaped waits until process pid has exited and leaves it
// unreaped (a zombie), so that its ID, and its group's, cannot name
// another process yet. It reports false if it could not wait so.
func exitedUnreaped(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err == nil
		}
	}
}

// signalGroup terminates (SIGTERM) or kills (SIGKILL) cmd's process group.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	syscall.Kill(-cmd.Process.Pid, sig)
}
