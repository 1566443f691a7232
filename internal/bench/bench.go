// Package bench measures what cairn's stores cost against what their
// backends cannot beat: the report behind `cairn bench` and
// docs/PERFORMANCE.md.
package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cairnhq/cairn"
)

// Options configure Run.
type Options struct {
	// Stores are the store URLs to measure; empty means every backend
	// Discover finds.
	Stores []string
	// Quick takes fewer samples and shorter runs: a smoke check.
	Quick bool
	// Dir is where the file and sqlite stores and the naive rewrite
	// write; empty means a new temporary folder, removed afterwards.
	Dir string
	// Progress, when set, is told what is being measured.
	Progress func(step string)
	// LongOnly measures only the agent on a long conversation
	// (AgentTurnUS, RequestTokensMax, OpenMS), and no naive rewrite.
	LongOnly bool
	// NoLong leaves the long conversation out: the appends, resume,
	// concurrency and naive figures only, in a fraction of the time.
	NoLong bool
}

// Report is the result of Run; its JSON form is what `cairn bench --json`
// prints.
type Report struct {
	Results      []Result `json:"results"`
	Skipped      []Skip   `json:"skipped"` // server backends found nowhere to measure
	NaiveRewrite Naive    `json:"naive_rewrite"`
	Quick        bool     `json:"quick"`
	LongOnly     bool     `json:"long_only,omitempty"` // only the long-conversation figures were measured
	NoLong       bool     `json:"no_long,omitempty"`   // the long-conversation figures were not measured
}

// Result is what Run measured on one backend. Latencies are medians (p50)
// and 99th percentiles of single calls; maps are keyed by history length
// or session length.
type Result struct {
	Backend   string             `json:"backend"`
	AppendP50 map[string]float64 `json:"append_p50_us"`
	AppendP99 map[string]float64 `json:"append_p99_us"`
	FloorP50  float64            `json:"floor_p50_us"`
	FloorP99  float64            `json:"floor_p99_us"`
	Floor     string             `json:"floor"` // what the floor is
	// AtomicFloor, on a backend whose floor write has no condition, is the
	// least a compare-and-append costs there, timed beside the floor.
	AtomicFloor    string             `json:"atomic_floor,omitempty"`
	AtomicFloorP50 float64            `json:"atomic_floor_p50_us,omitempty"`
	AtomicFloorP99 float64            `json:"atomic_floor_p99_us,omitempty"`
	ResumeMS       map[string]float64 `json:"resume_ms"`
	ResumeFloorMS  map[string]float64 `json:"resume_floor_ms"`
	BytesPerEvent  *float64           `json:"bytes_per_event"` // nil where the backend cannot tell
	EventJSONBytes int                `json:"event_json_bytes"`
	Concurrent8vs1 float64            `json:"concurrent_8_vs_1"`
	// Floor8vs1, where the floor's writes can run side by side (file), is
	// the same ratio for 8 floor writers, each with its own file, against 1.
	Floor8vs1   float64 `json:"floor_concurrent_8_vs_1,omitempty"`
	Throughput1 float64 `json:"throughput_1_per_s"`
	Throughput8 float64 `json:"throughput_8_per_s"`
	// Concurrent64vs1 and Throughput64 are the same for 64 sessions.
	Concurrent64vs1 float64 `json:"concurrent_64_vs_1"`
	Throughput64    float64 `json:"throughput_64_per_s"`
	// CPUPerAppend is the process's user and system CPU time per append of
	// one event, measured with getrusage around loops of appends; the
	// floor's beside it, measured in blocks taken in turns with the
	// appends' (see measureCPU). On a server backend it leaves out the
	// server's work: it is cairn's own, with its driver's. OwnCPU is the
	// median over the rounds of the append's CPU minus the floor write's:
	// what cairn and its driver add to the write. AllocsPerAppend and
	// FloorAllocs count heap allocations the same way.
	CPUPerAppend    float64 `json:"cpu_us_per_append"`
	OwnCPU          float64 `json:"own_cpu_us_per_append"`
	AllocsPerAppend float64 `json:"allocs_per_append"`
	FloorCPU        float64 `json:"floor_cpu_us_per_op"`
	FloorAllocs     float64 `json:"floor_allocs_per_op"`
	AtomicFloorCPU  float64 `json:"atomic_floor_cpu_us_per_op,omitempty"`
	// AgentTurnUS is the agent's time for one turn of a long conversation
	// in one process (Session.Run with Continue, the median of the 20
	// turns ending near the mark), by turn; RequestTokensMax is the
	// largest request sent to the model until then, in tokens. OpenMS is
	// the time to open a session of that many turns in a new agent and
	// run one more turn (agent.Open and Session.Run), by turns.
	AgentTurnUS      map[string]float64 `json:"agent_turn_us"`
	RequestTokensMax map[string]int     `json:"request_tokens_max"`
	OpenMS           map[string]float64 `json:"open_ms"`
	// SessionBytes is what the store grew by for one conversation of
	// settings.bytesTurns turns, snapshots included: run by one process
	// ("one_process") and by an agent opened anew every turn ("reopened",
	// whose Open and turn near the end is OpenMS["reopened"]).
	SessionBytes map[string]int64 `json:"session_bytes,omitempty"`
	Error        string           `json:"error,omitempty"` // why the backend could not be measured
}

// Naive compares cairn with the naive way to save a chat loop: re-serialise
// the whole memory and rewrite one file after every step.
type Naive struct {
	Steps      int     `json:"steps"`
	NaiveMS    float64 `json:"naive_ms"`        // rewrite and fsync the document after each step
	CairnMS    float64 `json:"cairn_ms"`        // one Append per step to the file store
	Ratio      float64 `json:"ratio"`           // NaiveMS / CairnMS
	NaiveBytes int64   `json:"naive_bytes"`     // bytes the naive loop wrote
	CairnBytes int64   `json:"cairn_bytes"`     // bytes the file store wrote
	NoSyncMS   float64 `json:"naive_nosync_ms"` // the same loop without fsync, as the simplest chat loop does
	// StepUS is the naive loop's time for one step (the median of the ten
	// steps ending there) by history length: it grows with the history.
	StepUS map[string]float64 `json:"naive_step_us"`
}

// settings are the sample counts of a run.
type settings struct {
	lengths    []int // history lengths of the append measurement
	samples    int   // appends per history length
	resume     []int // session lengths of the resume measurement
	resumeRep  int   // resumes per length
	cpuOps     int   // appends (and floor writes) of the CPU measurement
	perWriter  int   // appends per writer in the concurrency measurement
	rounds     int   // rounds of the concurrency measurement
	steps      int   // steps of the naive comparison
	longTurns  int   // turns of the agent-turn measurement
	openTurns  []int // session lengths, in turns, of the open measurement
	openRep    int   // opens per length
	bytesTurns int   // turns of the conversation whose bytes are measured
}

func settingsFor(quick bool) settings {
	if quick {
		return settings{lengths: []int{10, 10000}, samples: 40, resume: []int{1000, 20000}, resumeRep: 1,
			cpuOps: 100, perWriter: 40, rounds: 1, steps: 300, longTurns: 300, openTurns: []int{10, 1000}, openRep: 2, bytesTurns: 100}
	}
	return settings{lengths: []int{10, 100, 1000, 3000, 10000}, samples: 400, resume: []int{1000, 20000},
		resumeRep: 5, cpuOps: 2000, perWriter: 300, rounds: 3, steps: 1000,
		longTurns: 3000, openTurns: []int{10, 1000, 10000}, openRep: 7, bytesTurns: 1000}
}

// Run measures every store of opts and the naive comparison.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.LongOnly && opts.NoLong {
		return nil, errors.New("measure only the long conversation, or leave it out: not both")
	}
	cfg := settingsFor(opts.Quick)
	progress := orIgnore(opts.Progress)
	dir, cleanup, err := workDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	urls := opts.Stores
	skipped := []Skip{}
	if len(urls) == 0 {
		urls, skipped = discover(ctx, dir)
	}
	rep := &Report{Results: []Result{}, Skipped: skipped, Quick: opts.Quick, LongOnly: opts.LongOnly, NoLong: opts.NoLong}
	for _, u := range urls {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res := Result{Backend: backendName(u)}
		b, err := openBackend(ctx, u, dir)
		if errors.Is(err, errors.ErrUnsupported) { // the file store, on Windows
			rep.Skipped = append(rep.Skipped, Skip{Backend: res.Backend, Reason: err.Error()})
			continue
		}
		if err != nil {
			res.Error = err.Error()
			rep.Results = append(rep.Results, res)
			continue
		}
		step := func(step string) { progress(res.Backend + ": " + step) }
		if opts.LongOnly {
			err = measureLong(ctx, b, cfg, &res, step)
		} else {
			err = measure(ctx, b, cfg, &res, step, !opts.NoLong)
		}
		b.close()
		if err != nil {
			res.Error = err.Error()
		}
		rep.Results = append(rep.Results, res)
	}
	if opts.LongOnly {
		return rep, nil
	}
	progress("naive rewrite")
	rep.NaiveRewrite, err = naive(ctx, dir, cfg.steps)
	if errors.Is(err, errors.ErrUnsupported) {
		// The comparison is with the file store, which does not run on
		// this system: it is left out (Steps 0).
		rep.NaiveRewrite = Naive{}
	} else if err != nil {
		return nil, fmt.Errorf("naive rewrite: %w", err)
	}
	return rep, nil
}

// measure fills res with every measurement of b.
func measure(ctx context.Context, b *backend, cfg settings, res *Result, progress func(string), long bool) error {
	res.Floor, res.AtomicFloor = b.floorName, b.atomicName
	res.EventJSONBytes = EventJSONBytes(Event(1))
	progress("sessions")
	short := 0
	for _, n := range cfg.lengths {
		if n < 1000 {
			short++
		}
	}
	if err := b.createSessions(ctx, len(cfg.lengths)+short*(cfg.samples/rotate+1)+len(cfg.resume)+1+cfg.rounds*(1+8+64)+2+len(cfg.openTurns)+2); err != nil {
		return fmt.Errorf("create sessions: %w", err)
	}
	progress("append latency")
	if err := measureAppend(ctx, b, cfg, res); err != nil {
		return fmt.Errorf("append: %w", err)
	}
	progress("CPU per append")
	if err := measureCPU(ctx, b, cfg.cpuOps, res); err != nil {
		return fmt.Errorf("CPU per append: %w", err)
	}
	progress("resume")
	if err := measureResume(ctx, b, cfg, res); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	progress("concurrency")
	if err := measureConcurrency(ctx, b, cfg, res); err != nil {
		return fmt.Errorf("concurrency: %w", err)
	}
	if !long {
		return nil
	}
	if err := measureLong(ctx, b, cfg, res, progress); err != nil {
		return fmt.Errorf("long conversations: %w", err)
	}
	return nil
}

// percentile returns the p-th percentile of d in microseconds.
func percentile(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return round(float64(s[min(len(s)-1, len(s)*p/100)].Nanoseconds()) / 1e3)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// round keeps three significant decimals, enough for a report.
func round(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return f
}

func key(n int) string { return strconv.Itoa(n) }

// createSessions creates n empty sessions for the measurements to use, all
// before any of them writes: on some backends (the mongodb store on
// FerretDB) a Create costs more as the events collection grows.
func (b *backend) createSessions(ctx context.Context, n int) error {
	for range n {
		id := "bench-" + cairn.NewID()
		if err := b.store.Create(ctx, cairn.SessionMeta{ID: id}); err != nil {
			return err
		}
		b.fresh = append(b.fresh, id)
	}
	return nil
}

// session returns an empty session for a measurement.
func (b *backend) session(ctx context.Context) (string, error) {
	if len(b.fresh) > 0 {
		id := b.fresh[0]
		b.fresh = b.fresh[1:]
		return id, nil
	}
	id := "bench-" + cairn.NewID()
	return id, b.store.Create(ctx, cairn.SessionMeta{ID: id})
}
