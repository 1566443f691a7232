package reliability

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/fault"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/store/mongodb"
)

// Messages the cairn command writes to stderr.
const (
	msgUnsaved     = "could not be saved"                                  // exit 3: the run ended with events the store does not hold
	msgResumeHint  = "cairn sessions resume"                               // the hint that goes with it
	msgNotRecorded = "the store could not record the start of a tool call" // a side effect not run
	msgLease       = "lease could not be renewed"                          // a holder that stopped at its lease's validity
	msgDegraded    = "the store failed"                                    // the degrade warning
)

// eachServer runs scenario on PostgreSQL, Redis and MongoDB side by side.
func eachServer(t *testing.T, scenario func(t *testing.T, name string)) {
	if testing.Short() {
		t.Skip("runs cairn against the servers through a proxy")
	}
	for _, name := range fault.ServerBackends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			scenario(t, name)
		})
	}
}

// resumeForce runs `cairn sessions resume ID --force` through c until it
// completes the session. On MongoDB a writer that died between the two
// round trips of an append holds the session until its documents are
// StaleAfter old (a documented limit): the resume is refused until then.
func (r *eoRig) resumeForce(t *testing.T, c *cli) fault.Exit {
	t.Helper()
	for range 3 {
		e := r.run(t, c, "sessions", "resume", r.id, "--force").Wait()
		if e.Code != 0 && r.b.Name == "mongodb" && staleBlock(e.Stderr) {
			t.Logf("resume: %s; waiting %s", fault.LastLine(e.Stderr, "cairn:"), mongodb.StaleAfter)
			time.Sleep(mongodb.StaleAfter + time.Second)
			continue
		}
		return e
	}
	t.Fatal("the session stayed blocked")
	return fault.Exit{}
}

// TestCLI_ExactlyOnceDegradeCut is scenario (a): on_error "degrade", a
// 16-step run of append_file; 1 s in (five results stored) every
// connection is cut, and stays cut until the run ends. The run must not
// make a side effect whose start it cannot store: it stops, exit 3, naming
// the cause. Healed, `cairn sessions resume --force` finishes it: every
// line once.
func TestCLI_ExactlyOnceDegradeCut(t *testing.T) {
	eachServer(t, func(t *testing.T, name string) {
		r := newEORig(t, name, steps(16, true, 200*time.Millisecond))
		a := r.run(t, r.proxy, "run", "--session", r.id, eoPrompt)
		r.untilResults(t, 5)
		r.px.Cut()
		cut := time.Now()
		ea := a.Wait()
		stopped := time.Since(cut)
		wantExit(t, "cut run", ea, 3, msgUnsaved, msgNotRecorded, msgResumeHint)
		before := len(testcheck.SideLines(t, r.side))
		r.px.Heal()
		resumed := time.Now()
		eb := r.resumeForce(t, r.proxy)
		wantExit(t, "resume --force", eb, 0)
		c := r.check(t)
		t.Logf("%s: %d side effects before the cut; the cut run ended %s after it: exit %d, %q; the resume took %s; %s",
			name, before, stopped.Round(100*time.Millisecond), ea.Code, fault.LastLine(ea.Stderr, "cairn:"), time.Since(resumed).Round(100*time.Millisecond), c)
	})
}

// TestCLI_ExactlyOnceCutOffHolder is scenario (b): process A runs a long
// session through the proxy, which is cut 2 s in (its eight append_file
// steps stored). A goes on in memory with calc steps, and must stop acting
// when its lease is no longer surely valid ("lease could not be
// renewed"), before it can expire in the store. Once the store shows the
// lease expired, process B (straight to the server) runs `cairn sessions
// resume ID`, without --force, and finishes the run: every line once.
func TestCLI_ExactlyOnceCutOffHolder(t *testing.T) {
	eachServer(t, func(t *testing.T, name string) {
		plan := append(append(steps(8, true, 250*time.Millisecond), steps(80, false, 250*time.Millisecond)...), steps(8, true, 50*time.Millisecond)...)
		r := newEORig(t, name, plan)
		a := r.run(t, r.proxy, "run", "--session", r.id, eoPrompt)
		r.untilResults(t, 8)
		r.px.Cut()
		waited := r.untilLeaseExpired(t)
		var aDone bool
		select {
		case <-a.Done():
			aDone = true
		default:
		}
		ea := a.Wait()
		wantExit(t, "cut-off holder", ea, 3, msgUnsaved, msgLease)
		eb := r.run(t, r.direct, "sessions", "resume", r.id).Wait()
		wantExit(t, "resume after the lease expired", eb, 0)
		r.px.Heal()
		c := r.check(t)
		t.Logf("%s: the lease expired in the store %s after the cut; the holder had stopped by then: %v; it ended: exit %d, %q; %s",
			name, waited.Round(100*time.Millisecond), aDone, ea.Code, fault.LastLine(ea.Stderr, "the run stopped:"), c)
	})
}

// TestCLI_ExactlyOnceCutHeals is scenario (c): a cut in the middle of a
// run's calc steps, healed as soon as cairn warns that the store failed.
// The run goes on in memory, writes what it missed when the store answers,
// runs the later append_file steps once each and ends with exit 0.
func TestCLI_ExactlyOnceCutHeals(t *testing.T) {
	eachServer(t, func(t *testing.T, name string) {
		plan := append(append(steps(4, true, 200*time.Millisecond), steps(10, false, 300*time.Millisecond)...), steps(4, true, 200*time.Millisecond)...)
		r := newEORig(t, name, plan)
		a := r.run(t, r.proxy, "run", "--session", r.id, eoPrompt)
		r.untilResults(t, 5) // the first calc step's result
		r.px.Cut()
		untilStderr(t, a, msgDegraded)
		r.px.Heal()
		ea := a.Wait()
		wantExit(t, "run through a healed cut", ea, 0, msgDegraded)
		c := r.check(t)
		t.Logf("%s: exit %d; %s", name, ea.Code, c)
	})
}

// TestCLI_ExactlyOnceWorkerTakeover is scenario (d): worker w1 (straight
// to the server, 3-s leases) runs a queued session and is SIGKILLed;
// worker w2, through the proxy, takes the session over once w1's lease
// ran out, and the proxy is cut as soon as the store shows w2's lease.
// Worker w3 (straight to the server) finishes the session once w2's lease
// ran out in turn.
func TestCLI_ExactlyOnceWorkerTakeover(t *testing.T) {
	eachServer(t, func(t *testing.T, name string) {
		r := newEORig(t, name, steps(30, true, 200*time.Millisecond))
		worker := func(c *cli, n string) *fault.Process {
			return r.run(t, c, "worker", "--lease", "3s", "--poll", "100ms", "--name", n)
		}
		if e := r.run(t, r.direct, "run", "--detach", "--session", r.id, eoPrompt).Wait(); e.Code != 0 {
			t.Fatalf("run --detach: %s", e)
		}
		w1 := worker(r.direct, "w1")
		r.untilResults(t, 5)
		w1.Kill()
		w1.Wait()
		w2 := worker(r.proxy, "w2")
		l := r.st.(cairn.Leaser)
		fault.Until(t, time.Minute, "w2 to hold the session's lease", func() (bool, error) {
			cur, err := l.CurrentLease(context.Background(), r.id)
			return cur.Holder == "w2", err
		})
		r.px.Cut()
		w3 := worker(r.direct, "w3")
		fault.Until(t, 3*time.Minute, "the session to complete", func() (bool, error) {
			st, _ := statusOf(t, r.st, r.id)
			return st == cairn.StatusCompleted, nil
		})
		r.px.Heal()
		for _, w := range []*fault.Process{w2, w3} {
			w.Terminate()
		}
		e2, e3 := w2.Wait(), w3.Wait()
		wantExit(t, "w2", e2, 0)
		wantExit(t, "w3", e3, 0)
		if !finished(e3.Stderr, r.id) {
			t.Errorf("w3 did not log that it finished session %s:\n%s", r.id, e3.Stderr)
		}
		if finished(e2.Stderr, r.id) {
			t.Errorf("w2 finished the session through a cut connection:\n%s", e2.Stderr)
		}
		c := r.check(t)
		t.Logf("%s: w2 said: %s; %s", name, lastWarn(e2.Stderr), c)
	})
}

// finished reports whether a worker logged that it finished session id.
func finished(stderr, id string) bool {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "msg=finished") && strings.Contains(l, "session="+id+" ") {
			return true
		}
	}
	return false
}

// lastWarn returns the last warning a worker logged.
func lastWarn(stderr string) string {
	return fault.LastLine(stderr, "time=") // slog's text lines
}

// TestCLI_ExactlyOnceStallPastLease is scenario (e): every byte between
// cairn and the server is held (a stall, not a cut) from five results on,
// for longer than the lease. Once the store shows the lease expired,
// process B (straight to the server) resumes and finishes the session.
// Then the stall ends and whatever the first process had sent reaches the
// server: its fenced writes must be refused, and the history stays B's.
func TestCLI_ExactlyOnceStallPastLease(t *testing.T) {
	eachServer(t, func(t *testing.T, name string) {
		r := newEORig(t, name, steps(30, true, 200*time.Millisecond))
		a := r.run(t, r.proxy, "run", "--session", r.id, eoPrompt)
		r.untilResults(t, 5)
		r.px.Stall(0)
		waited := r.untilLeaseExpired(t)
		ea := a.Wait()
		wantExit(t, "stalled run", ea, 3, msgUnsaved)
		eb := r.run(t, r.direct, "sessions", "resume", r.id).Wait()
		wantExit(t, "resume during the stall", eb, 0)
		r.px.Release() // the stalled process's writes reach the server now
		fault.Until(t, time.Minute, "the held bytes to be delivered", func() (bool, error) { return r.px.Open() == 0, nil })
		c := r.check(t)
		t.Logf("%s: the lease expired %s into the stall; the stalled run: exit %d, %q; %s",
			name, waited.Round(100*time.Millisecond), ea.Code, fault.LastLine(ea.Stderr, "the run stopped:"), c)
	})
}

// TestCLI_ExactlyOnceKillDuringFlush is scenario (f): a run degraded by a
// cut goes on in memory; when the connections come back, its first write
// carries the backlog (the flush). That write reaches the server and the
// process is SIGKILLed before it learns the outcome: its reply is held
// ("reply lost"), or the write itself is held and delivered after the
// process died ("late flush"). `cairn sessions resume --force` finishes
// the run: every line once, nothing acknowledged lost.
func TestCLI_ExactlyOnceKillDuringFlush(t *testing.T) {
	for _, how := range []string{"reply lost", "late flush"} {
		t.Run(strings.ReplaceAll(how, " ", "_"), func(t *testing.T) {
			eachServer(t, func(t *testing.T, name string) {
				plan := append(append(steps(4, true, 250*time.Millisecond), steps(8, false, 250*time.Millisecond)...), steps(4, true, 250*time.Millisecond)...)
				r := newEORig(t, name, plan)
				a := r.run(t, r.proxy, "run", "--session", r.id, eoPrompt)
				r.untilResults(t, 5)
				r.px.Cut()
				stored, _ := count(r.st, r.id, cairn.KindModelResponse)
				untilStderr(t, a, msgDegraded) // a write failed: the backlog has begun
				// Let the connections through again, and hold the first
				// write with a model response in it (more than 1.5 KB;
				// drivers' handshakes and lease renewals are far smaller):
				// the flush.
				r.px.StallAt(1500)
				r.px.EndCut()
				fault.Until(t, time.Minute, "the flush to reach the proxy", func() (bool, error) {
					req, _ := r.px.HeldBytes()
					return req > 1500, nil
				})
				if how == "reply lost" {
					r.px.ReleaseRequests() // the flush reaches the server; its answer waits
					fault.Until(t, time.Minute, "the server's answer to the flush", func() (bool, error) {
						_, rep := r.px.HeldBytes()
						return rep > 0, nil
					})
				}
				a.Kill()
				ea := a.Wait()
				if how == "reply lost" {
					r.px.Cut() // the answer is lost
				} else {
					r.px.Release() // the flush lands after its writer died
					fault.Until(t, time.Minute, "the held bytes to be delivered", func() (bool, error) { return r.px.Open() == 0, nil })
				}
				r.px.Heal()
				after, _ := count(r.st, r.id, cairn.KindModelResponse)
				eb := r.resumeForce(t, r.direct)
				wantExit(t, "resume --force", eb, 0)
				c := r.check(t)
				t.Logf("%s, %s: killed (%v); model responses stored: %d at the cut, %d after the kill; %s",
					name, how, ea.Killed(), stored, after, c)
			})
		})
	}
}
