package reliability

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/testing/fault"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/provider/script"
)

// Each of TestAgent_OutageRandom's runs meets up to randomCuts cuts; each
// backend and mode gets randomRuns runs.
const (
	randomCuts = 6
	randomRuns = 3
)

// TestAgent_OutageRandom cuts the connections at random moments of a run,
// so that some cuts land while a write is on the wire (its reply lost,
// whether or not the server applied it). With "degrade" the run completes,
// or stops as interrupted when a cut meets the start of append_file (which
// never runs unless its start is stored); either way the store ends up
// holding exactly the session, and resuming completes it. With "fail" the run
// completes or stops with an error; the store then holds a valid session
// that the session's memory is a prefix of (the one write whose reply was
// lost may be there too), and resuming it completes the run.
func TestAgent_OutageRandom(t *testing.T) {
	for _, name := range fault.ServerBackends {
		for _, mode := range []string{agent.Degrade, agent.Fail} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				r := newOutageRig(t, name)
				for i := range randomRuns {
					randomOutage(t, r, mode, fmt.Sprintf("random-%d", i))
				}
			})
		}
	}
}

func randomOutage(t *testing.T, r *outageRig, mode, id string) {
	dir := t.TempDir()
	side := filepath.Join(dir, "side.txt")
	model, err := script.Load(testcheck.CrashScript(t, dir, side, 2))
	if err != nil {
		t.Fatal(err)
	}
	newAgent := func() *agent.Agent {
		a := r.agent(t, mode, script.Step{Text: "replaced"})
		a.Model, a.MaxSteps = model, model.Steps()+1
		return a
	}
	s, err := newAgent().Start(t.Context(), agent.WithID(id))
	if err != nil {
		t.Fatal(err)
	}
	seed := testSeed(t)
	stop, cutter := make(chan struct{}), make(chan int)
	go func() {
		rng := rand.New(rand.NewPCG(seed, 3))
		n := 0
		defer func() { r.p.Heal(); cutter <- n }()
		for n < randomCuts {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(rng.IntN(60_000)) * time.Microsecond):
			}
			r.p.Cut()
			n++
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(rng.IntN(30_000)) * time.Microsecond):
			}
			r.p.Heal()
		}
	}()
	begin := time.Now()
	res, err := s.Run(t.Context(), "Run the script.")
	close(stop)
	cuts := <-cutter
	took := time.Since(begin).Round(time.Millisecond)
	resume := func() {
		for try := 1; ; try++ {
			again, err := newAgent().Resume(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			var res2 *agent.Result
			if again.State().Status == cairn.StatusNew {
				// The cut hit the run's first append: nothing of it was
				// stored, so there is no run to resume; run it again.
				res2, err = again.Run(t.Context(), "Run the script.")
			} else {
				res2, err = again.ResumeRun(t.Context())
			}
			if cairn.IsUnavailable(err) && strings.Contains(err.Error(), "has not committed") && try < 30 {
				// MongoDB: the stopped run's insert landed and its commit
				// was cut; its documents hold the session's next seq until
				// they are StaleAfter (30 s) old. Wait, as a person would.
				t.Logf("%s: resume: %v; again in 2s", id, err)
				time.Sleep(2 * time.Second)
				continue
			}
			if errors.Is(err, cairn.ErrConflict) && try < 3 {
				// The server applied the stopped run's last write, which
				// was on the wire when the cut came, after this resume
				// loaded the session: load it again.
				t.Logf("%s: resume: %v; again", id, err)
				continue
			}
			if err != nil || res2.Status != cairn.StatusCompleted {
				t.Fatalf("%s: resume: %+v, %v", id, res2, err)
			}
			checkStored(t, r.direct, again)
			return
		}
	}
	switch {
	case err == nil:
		if res.Status != cairn.StatusCompleted {
			t.Fatalf("%s (seed %d, %d cuts): %+v; want completed", id, seed, cuts, res)
		}
		flush(t, s)
		checkStored(t, r.direct, s)
		t.Logf("%s %s (seed %d): %d cuts in a run of %s; completed; %d warning(s); %d event(s) unsaved at its end",
			r.b.Name, id, seed, cuts, took, len(res.Warnings), res.Unsaved)
	case mode == agent.Degrade:
		// A cut met the start of append_file, which does not run unless
		// its start is stored: the run stopped as interrupted.
		if _, ok := errors.AsType[*agent.NotRecordedError](err); !ok || res.Status != cairn.StatusInterrupted {
			t.Fatalf("%s (seed %d, %d cuts): %+v, %v; want completed, or interrupted with a *agent.NotRecordedError", id, seed, cuts, res, err)
		}
		flush(t, s)
		checkStored(t, r.direct, s)
		t.Logf("%s %s (seed %d): %d cuts in a run of %s; interrupted: %v; %d event(s) unsaved at its end, flushed",
			r.b.Name, id, seed, cuts, took, err, res.Unsaved)
		resume()
	default:
		stored, _ := testcheck.LoadValid(t, r.direct, id)
		mem := s.Memory().Events()
		if len(stored) < len(mem) {
			t.Fatalf("%s: the store holds %d events, fewer than the %d of the session's memory", id, len(stored), len(mem))
		}
		testcheck.SameEvents(t, stored[:len(mem)], mem)
		t.Logf("%s %s (seed %d): %d cuts in a run of %s; stopped: %v; %d event(s) stored beyond the session's memory",
			r.b.Name, id, seed, cuts, took, err, len(stored)-len(mem))
		resume()
	}
	got, _ := testcheck.Completed(t, r.direct, id, side, nil)
	if len(got) != model.Steps() {
		t.Errorf("%s: %d model responses, want %d", id, len(got), model.Steps())
	}
}
