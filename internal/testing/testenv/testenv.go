// Package testenv finds the real servers that backend tests run against.
//
// Each backend's tests name the environment variable that holds their
// server's address (CAIRN_TEST_POSTGRES, CAIRN_TEST_REDIS,
// CAIRN_TEST_MONGODB). Locally a missing variable skips the test with a
// message naming it. Under CI (CI=true) a missing variable fails the test,
// so that a backend can never pass CI by being skipped.
//
// Bounded, FreeAddr and Serve help the outage tests: a call that must
// return with its context, an address where no server listens, and one
// where a test's own stand-in server answers.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The variables that name the test servers.
const (
	Postgres = "CAIRN_TEST_POSTGRES"
	Redis    = "CAIRN_TEST_REDIS"
	MongoDB  = "CAIRN_TEST_MONGODB"
)

// URL returns the value of the environment variable name. When it is empty
// the test is skipped, or failed under CI.
func URL(tb testing.TB, name string) string {
	tb.Helper()
	v := os.Getenv(name)
	if v != "" {
		return v
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s is not set: CI must run every backend's tests (see .ci/run)", name)
	}
	skipped.note(name)
	tb.Skipf("%s is not set: set it to a test server's URL to run these tests", name)
	return ""
}

// skipped counts, per variable, the tests URL skipped in this process.
var skipped skips

type skips struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *skips) note(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	s.n[name]++
}

// write writes one line per variable whose tests were skipped, naming the
// package, how many and the variable that runs them; nothing when none was.
func (s *skips) write(w io.Writer, pkg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.n))
	for name := range s.n {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		tests := "tests"
		if s.n[name] == 1 {
			tests = "test"
		}
		fmt.Fprintf(w, "%s: %d %s skipped, %s is not set (README.md, Testing)\n", pkg, s.n[name], tests, name)
	}
}

// ReportSkips tells the person at the terminal which of pkg's tests URL
// skipped and the variable that runs them, from a backend package's
// TestMain after m.Run. go test shows a passing package as "ok" and hides
// its output unless -v, so the line goes to the terminal itself
// (/dev/tty); with no terminal (a script, CI) it goes nowhere.
func ReportSkips(pkg string) {
	tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer tty.Close()
	skipped.write(tty, pkg)
}

// HangLimit is how long after its context ends a call may still run before
// Bounded fails the test: far more than an honest return takes on a loaded
// machine, far less than the timeouts of a call that ignores its context
// (a driver's read timeout, a cleanup of its own).
const HangLimit = 5 * time.Second

// Bounded calls f with a context that ends after d and returns f's error.
// It fails the test when f is still running HangLimit after that: a store
// method must never hang past its context.
func Bounded(tb testing.TB, d time.Duration, what string, f func(context.Context) error) error {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	timer := time.NewTimer(d + HangLimit)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		tb.Fatalf("%s: still running %s after its context ended", what, HangLimit)
		return nil
	}
}

// FreeAddr returns a loopback address where nothing listens: a port the
// system handed out and that was closed again.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Serve listens on a free loopback port until the test ends, and returns
// its address (host:port): each connection is served by handle, on a
// goroutine of its own, and closed when handle returns.
func Serve(tb testing.TB, handle func(c net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// RandHex returns n random bytes as 2n hexadecimal digits: a name no other
// test run has taken.
func RandHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// Examples prepares a backend package's runnable examples, from its
// TestMain before m.Run. An example with an "// Output:" comment cannot
// skip, so the examples read their server's address from exampleVar (the
// name a user's program would use, such as DATABASE_URL), which Examples
// sets from the test variable name. When name is empty and no -run pattern
// was given, the examples are left out of the run (-run selects the tests
// and fuzz targets only), with a line on stderr that says why; under CI a
// missing variable fails the tests as URL does, so the examples always run
// there.
func Examples(name, exampleVar string) {
	if !flag.Parsed() {
		flag.Parse()
	}
	if v := os.Getenv(name); v != "" {
		os.Setenv(exampleVar, v)
		return
	}
	if os.Getenv("CI") == "true" {
		return // the tests fail for the missing variable
	}
	if run := flag.Lookup("test.run"); run != nil && run.Value.String() == "" {
		_ = run.Value.Set("^(Test|Fuzz)")
		fmt.Fprintf(os.Stderr, "examples not run: %s is not set (set it to a test server's URL to run them)\n", name)
	}
}

// QuickRaceExit makes the processes the tests start exit as soon as they
// are done when they are built with the race detector (the test binary run
// again as a command, or a binary built with -race): by default the
// detector sleeps a second at exit (GORACE atexit_sleep_ms=1000), which,
// over the hundreds of commands a package's tests run, was most of their
// time under -race. Call it from TestMain; a GORACE that sets
// atexit_sleep_ms already is kept. Races are still reported: only the
// wait for goroutines still running at exit goes.
func QuickRaceExit() {
	os.Setenv("GORACE", RaceEnv(os.Getenv("GORACE")))
}

// RaceEnv returns the GORACE value goRace with atexit_sleep_ms=0 added,
// unless it sets atexit_sleep_ms itself.
func RaceEnv(goRace string) string {
	if strings.Contains(goRace, "atexit_sleep_ms") {
		return goRace
	}
	return strings.TrimSpace(goRace + " atexit_sleep_ms=0")
}

// Seed returns the seed of a randomized test's schedule and logs it first,
// so that a failure, even a timeout, can be replayed: given (a flag's
// value) unless it is zero, else the number in the environment variable
// env, else one from the clock. The log line names the seed by what it
// schedules, and the flag and the variable that replay it.
func Seed(tb testing.TB, given uint64, what, flagName, env string) uint64 {
	tb.Helper()
	s := given
	if s == 0 {
		if n, err := strconv.ParseUint(os.Getenv(env), 10, 64); err == nil {
			s = n
		}
	}
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	tb.Logf("%s seed %d (replay with -%s %d or %s=%d)", what, s, flagName, s, env, s)
	return s
}
