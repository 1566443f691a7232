package mcp

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// terminateGrace is how long a closing server's process is given to exit
// after its input is closed, and again after it is terminated, before it
// is killed (the SDK's CommandTransport waits as long).
const terminateGrace = 5 * time.Second

// process is a server's command running with its standard input, output
// and error on pipes of its own (so that waiting for its exit never waits
// for their readers), in a process group of its own where the system has
// them (prepare, in process_*.go).
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // the end the client writes
	stdout *os.File // the end the client reads
	stderr *os.File // the end copied into the tail

	exited     chan struct{} // closed once the process ended and was reaped
	stderrDone chan struct{} // closed once its error output is read to the end

	mu      sync.Mutex
	reaped  bool // its ID, and so its group's, may be another's now: never signal it
	waitErr error

	closeOnce sync.Once
	closeErr  error
}

// startProcess starts cmd with pipes for its standard input and output,
// its error output copied to stderr.
func startProcess(cmd *exec.Cmd, stderr io.Writer) (*process, error) {
	var ends []*os.File // every end, closed if the start fails
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			ends = append(ends, r, w)
		}
		return r, w, err
	}
	fail := func(err error) (*process, error) {
		for _, f := range ends {
			f.Close()
		}
		return nil, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return fail(err)
	}
	outR, outW, err := pipe()
	if err != nil {
		return fail(err)
	}
	errR, errW, err := pipe()
	if err != nil {
		return fail(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := prepare(cmd); err != nil {
		return fail(err)
	}
	if err := start(cmd); err != nil {
		return fail(err)
	}
	// The child has its ends; the parent keeps only its own.
	inR.Close()
	outW.Close()
	errW.Close()
	p := &process{cmd: cmd, stdin: inW, stdout: outR, stderr: errR, exited: make(chan struct{}), stderrDone: make(chan struct{})}
	go func() {
		io.Copy(stderr, errR)
		close(p.stderrDone)
	}()
	go p.wait()
	return p, nil
}

// wait waits for the process to end, kills what is left of its group
// while its ID still names it (where the system lets a parent wait without
// reaping), and reaps it.
func (p *process) wait() {
	if exitedUnreaped(p.cmd.Process.Pid) {
		p.mu.Lock()
		signalGroup(p.cmd, true)
		p.mu.Unlock()
	}
	err := p.cmd.Wait()
	p.mu.Lock()
	p.reaped, p.waitErr = true, err
	p.mu.Unlock()
	close(p.exited)
}

// signal signals the process's group (the process alone where the system
// has no groups) unless it was reaped: to terminate, or to kill.
func (p *process) signal(kill bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		signalGroup(p.cmd, kill)
	}
}

// terminate asks the process group to end now.
func (p *process) terminate() { p.signal(false) }

// Write writes to the process's standard input.
func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close ends the process as the MCP specification asks of a client: its
// input is closed; if it has not exited within terminateGrace, its group
// is terminated; if it has not exited within terminateGrace again, the
// group is killed. It returns how the process ended (an *exec.ExitError
// when it did not exit with status 0).
func (p *process) Close() error {
	p.closeOnce.Do(func() {
		p.stdin.Close()
		if !p.waitExit(terminateGrace) {
			p.signal(false)
			if !p.waitExit(terminateGrace) {
				p.signal(true)
				if !p.waitExit(terminateGrace) {
					p.closeErr = errors.New("the server's process did not end when killed")
					return
				}
			}
		}
		// What the group left holding the error output ends with it;
		// anything that left the group is not waited for.
		select {
		case <-p.stderrDone:
		case <-time.After(time.Second):
		}
		p.stderr.Close()
		p.stdout.Close()
		p.mu.Lock()
		p.closeErr = p.waitErr
		p.mu.Unlock()
	})
	return p.closeErr
}

func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}
