package bench

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/store/postgres"
)

// ScaleOptions configure RunScale.
type ScaleOptions struct {
	// Stores are the store URLs to measure; at least one.
	Stores []string
	// Sessions are the sizes to measure each store at, smallest first.
	Sessions []int
	// Refill fills the stores again even where a fill of the same size is
	// there to reuse.
	Refill bool
	// Reps is how many times each operation is timed (default 11); a slow
	// operation stops earlier, after 3 and 15 s.
	Reps int
	// Progress, when set, is told what is being done, about once a
	// second during a fill (for a terminal line that is rewritten).
	Progress func(step string)
	// Log, when set, is told the same as Progress, but at most every 30
	// seconds during a fill (for a log).
	Log func(line string)

	nsPrefix string // before the namespaces' names: tests sharing a server keep apart
}

// ScaleReport is the result of RunScale; its JSON form is what `cairn
// bench --sessions N --json` prints. Times are in milliseconds.
type ScaleReport struct {
	Results []ScaleResult `json:"results"`
}

// ScaleResult is what RunScale measured on one store at one size.
type ScaleResult struct {
	Backend   string `json:"backend"`
	Store     string `json:"store"` // the URL, without its password
	Sessions  int    `json:"sessions"`
	Namespace string `json:"namespace"`
	// Expired is how many of the sessions had expired when measured: the
	// oldest tenth, which gc removes.
	Expired int       `json:"expired"`
	Fill    ScaleFill `json:"fill"`
	Ops     []ScaleOp `json:"ops"`
	GC      *ScaleGC  `json:"gc,omitempty"`
	// BytesBeforeGC and BytesAfterGC are the size of a SQLite store's
	// file before and after gc; 0 where not known.
	BytesBeforeGC int64  `json:"bytes_before_gc,omitempty"`
	BytesAfterGC  int64  `json:"bytes_after_gc,omitempty"`
	Error         string `json:"error,omitempty"` // why the store could not be measured
}

// ScaleFill says how the store came to hold its sessions.
type ScaleFill struct {
	// Action is "filled" (written now), "reused" (a fill of the same size
	// was there), "topped_up" (reused, and the sessions an earlier gc
	// removed written again) or "resumed" (a fill that was stopped,
	// finished).
	Action    string  `json:"action"`
	Written   int     `json:"written"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"per_second"`
}

// ScaleOp is one operation timed on a filled store: the median and the
// slowest of Reps runs, and the rows its last run returned.
type ScaleOp struct {
	Name  string  `json:"name"`
	P50MS float64 `json:"p50_ms"`
	MaxMS float64 `json:"max_ms"`
	Reps  int     `json:"reps"`
	Rows  int     `json:"rows"`
	// Note says what is wrong with the answers, when something is (a
	// filter the store did not apply).
	Note string `json:"note,omitempty"`
}

// ScaleGC is the garbage collection of the expired sessions, and what a
// writer appending to another session meanwhile saw.
type ScaleGC struct {
	Removed   int     `json:"removed"`
	MS        float64 `json:"ms"`
	MSPer1000 float64 `json:"ms_per_1000_removed"`
	// WriterIdle is the writer's append latency with no gc running;
	// WriterDuringGC while the gc ran.
	WriterIdle     Latency `json:"writer_idle"`
	WriterDuringGC Latency `json:"writer_during_gc"`
	Note           string  `json:"note,omitempty"`
}

// Latency summarises the appends of a writer.
type Latency struct {
	Appends int     `json:"appends"`
	P50MS   float64 `json:"p50_ms"`
	P99MS   float64 `json:"p99_ms"`
	MaxMS   float64 `json:"max_ms"`
}

// RunScale fills each store of opts with each number of sessions (or
// reuses an earlier fill) and times what the commands do there.
func RunScale(ctx context.Context, opts ScaleOptions) (*ScaleReport, error) {
	if len(opts.Stores) == 0 {
		return nil, errors.New("no store to measure: give one or more store URLs")
	}
	if err := checkSizes(opts.Sessions, "sessions"); err != nil {
		return nil, err
	}
	if opts.Reps <= 0 {
		opts.Reps = 11
	}
	opts.Progress, opts.Log = orIgnore(opts.Progress), orIgnore(opts.Log)
	rep := &ScaleReport{Results: []ScaleResult{}}
	for _, u := range opts.Stores {
		for _, n := range opts.Sessions {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			res := ScaleResult{Backend: backendName(u), Store: text.RedactURL(u), Sessions: n,
				Namespace: fmt.Sprintf("%sbench_scale_%d", opts.nsPrefix, n), Ops: []ScaleOp{}}
			if err := scaleStore(ctx, u, opts, &res); err != nil {
				res.Error = err.Error()
			}
			rep.Results = append(rep.Results, res)
		}
	}
	return rep, nil
}

// scaleClock is the clock of the store under measurement: the fill's
// clock while it fills; while it measures, one that starts just after the
// fill's end (plan.measureStart) and runs a thousand times slower than
// real time, so that the sessions expired are those of the fill's first
// tenth however long the measurement takes, and any day it is repeated.
type scaleClock struct {
	fill    fillClock
	filling atomic.Bool
	t0      time.Time
	start   time.Time
}

func (c *scaleClock) now() time.Time {
	if c.filling.Load() {
		return c.fill.now()
	}
	return c.t0.Add(time.Since(c.start) / 1000).UTC()
}

func (c *scaleClock) measure(t0 time.Time) { c.t0, c.start = t0, time.Now(); c.filling.Store(false) }

// scaleStore fills (or reuses) the store at u with res.Sessions sessions
// and measures it.
func scaleStore(ctx context.Context, u string, opts ScaleOptions, res *ScaleResult) error {
	say := func(s string) { opts.Progress(res.Backend + " " + key(res.Sessions) + ": " + s) }
	clock := &scaleClock{}
	clock.filling.Store(true)
	so := cairn.StoreOptions{Namespace: res.Namespace, TTL: scaleTTL, Now: clock.now}
	s, err := cairn.Open(ctx, u, so)
	if err != nil {
		return fmt.Errorf("open %s: %w", text.RedactURL(u), err)
	}
	defer func() { s.Close() }()
	var ms cairn.Store // the marker's store; none in memory, which keeps nothing
	if res.Backend != "memory" {
		if ms, err = cairn.Open(ctx, u, cairn.StoreOptions{Namespace: markerNamespace(res.Namespace)}); err != nil {
			return fmt.Errorf("open %s: %w", text.RedactURL(u), err)
		}
		defer ms.Close()
	}
	p, err := prepare(ctx, u, s, ms, clock, opts, res)
	if err != nil {
		return err
	}
	if res.Backend == "sqlite" && res.Fill.Action != "reused" {
		// The fill went through a store of its own; measure through one
		// opened afresh, with a cold cache, as a command would.
		s.Close()
		if s, err = cairn.Open(ctx, u, so); err != nil {
			return fmt.Errorf("open %s: %w", text.RedactURL(u), err)
		}
	}
	if ps, ok := s.(*postgres.Store); ok {
		opts.Progress(res.Backend + " " + key(res.Sessions) + ": VACUUM ANALYZE")
		if err := vacuumAnalyze(ctx, ps); err != nil {
			return err
		}
	}
	clock.measure(p.measureStart())
	res.Expired = p.expired()
	if path := sqlitePath(u); path != "" {
		res.BytesBeforeGC, _, _ = sqliteSize(ctx, path)
	}
	m := &scaleRun{s: s, p: p, reps: opts.Reps, say: say}
	if err := m.ops(ctx, res); err != nil {
		return err
	}
	say("gc")
	gc, err := m.gc(ctx)
	if ms != nil && gc != nil && gc.Removed > 0 {
		if merr := markSwept(ctx, ms, p); merr != nil {
			err = errors.Join(err, merr)
		}
	}
	res.GC = gc
	if path := sqlitePath(u); path != "" {
		res.BytesAfterGC, _, _ = sqliteSize(ctx, path)
	}
	return err
}

// vacuumAnalyze does to the namespace's tables what autovacuum does after
// a load as large as a fill (and a gc): it clears the dead row versions and
// gathers the statistics the planner chooses by. Without statistics the
// planner takes every session ID for a common one, and the cascade of a
// session's events out of a gc cost 3 ms a session (its plan compiled
// anew each time). Servers run autovacuum; the figures then are those of a
// server it has caught up with.
func vacuumAnalyze(ctx context.Context, s *postgres.Store) error {
	for _, t := range []string{"sessions", "events", "session_labels", "session_text"} {
		if _, err := s.Pool().Exec(ctx, "VACUUM ANALYZE "+pgx.Identifier{s.Schema(), t}.Sanitize()); err != nil {
			return fmt.Errorf("vacuum analyze %s: %w", t, err)
		}
	}
	return nil
}

// markSwept records in the marker that a gc removed the expired sessions,
// so that the next run writes them again.
func markSwept(ctx context.Context, ms cairn.Store, p plan) error {
	_, last, err := readMarker(ctx, ms)
	if err != nil {
		return err
	}
	return writeMarker(ctx, ms, marker{Version: fillVersion, Sessions: p.n, T0: p.t0, Batch: p.batch, State: stateSwept}, last)
}

// prepare makes s hold the fill of res.Sessions sessions: it reuses the
// one the marker records, writes again what a gc removed from it,
// finishes it if it was stopped, or clears the namespace and fills it.
func prepare(ctx context.Context, u string, s, ms cairn.Store, clock *scaleClock, opts ScaleOptions, res *ScaleResult) (plan, error) {
	var (
		m    *marker
		last int64
		err  error
	)
	if ms != nil {
		if m, last, err = readMarker(ctx, ms); err != nil {
			return plan{}, err
		}
	}
	ok := m != nil && !opts.Refill && m.Version == fillVersion && m.Sessions == res.Sessions &&
		m.Batch == newPlan(res.Sessions, m.T0).batch
	if ok && m.State == stateComplete {
		res.Fill.Action = "reused"
		return newPlan(res.Sessions, m.T0), nil
	}
	p := newPlan(res.Sessions, time.Now())
	from, to := 0, p.n
	res.Fill.Action = "filled"
	switch {
	case ok && m.State == stateSwept:
		p, to = newPlan(res.Sessions, m.T0), newPlan(res.Sessions, m.T0).expired()
		res.Fill.Action = "topped_up"
	case ok && m.State == stateFilling:
		p = newPlan(res.Sessions, m.T0)
		res.Fill.Action = "resumed"
	default:
		if err := clearNamespace(ctx, s, clock, res, opts); err != nil {
			return p, err
		}
		if ms != nil {
			if err := writeMarker(ctx, ms, marker{Version: fillVersion, Sessions: p.n, T0: p.t0, Batch: p.batch, State: stateFilling}, last); err != nil {
				return p, err
			}
			last++
		}
	}
	fs := s
	if fu := fillURL(u); fu != u {
		if fs, err = cairn.Open(ctx, fu, cairn.StoreOptions{Namespace: res.Namespace, TTL: scaleTTL, Now: clock.now}); err != nil {
			return p, fmt.Errorf("open %s: %w", text.RedactURL(fu), err)
		}
		defer fs.Close()
	}
	start := time.Now()
	lastLog := start
	clock.filling.Store(true)
	report := func(done int) {
		el := time.Since(start)
		rate := float64(done) / el.Seconds()
		msg := fmt.Sprintf("%s %d: fill: %d of %d sessions, %.0f/s", res.Backend, res.Sessions, done, to-from, rate)
		if rate > 0 && done < to-from {
			msg += fmt.Sprintf(", %s left", (time.Duration(float64(to-from-done)/rate) * time.Second).Round(time.Second))
		}
		opts.Progress(msg)
		if time.Since(lastLog) >= 30*time.Second || done == to-from {
			opts.Log(msg)
			lastLog = time.Now()
		}
	}
	if err := fill(ctx, fs, &clock.fill, p, from, to, report); err != nil {
		return p, fmt.Errorf("fill: %w", err)
	}
	el := time.Since(start)
	res.Fill.Written, res.Fill.Seconds = to-from, round(el.Seconds())
	res.Fill.PerSecond = round(float64(to-from) / el.Seconds())
	if ms != nil {
		if err := writeMarker(ctx, ms, marker{Version: fillVersion, Sessions: p.n, T0: p.t0, Batch: p.batch, State: stateComplete}, last); err != nil {
			return p, err
		}
	}
	return p, nil
}

// clearNamespace removes every session of the namespace: a sweep on a
// clock a century ahead, as every session of a fill has a TTL.
func clearNamespace(ctx context.Context, s cairn.Store, clock *scaleClock, res *ScaleResult, opts ScaleOptions) error {
	sw, ok := s.(driver.Sweeper)
	if !ok || res.Backend == "memory" {
		return nil
	}
	opts.Progress(res.Backend + " " + key(res.Sessions) + ": clearing the namespace")
	clock.measure(time.Now().AddDate(100, 0, 0))
	defer clock.filling.Store(true)
	if _, err := sw.Sweep(ctx); err != nil {
		return fmt.Errorf("clear namespace %s: %w", res.Namespace, err)
	}
	return nil
}

// fillURL is the URL to fill through: one that does not wait for each
// commit to reach the disk, unless the URL says how to commit. A fill lost
// to a power cut is simply done again (its marker, written through the URL
// as given, says complete only after it). SQLite gets synchronous=normal
// (its URLs take no synchronous=off); PostgreSQL synchronous_commit=off,
// which pgx passes on to the server as a setting of the fill's
// connections.
func fillURL(u string) string {
	param, value := "", ""
	switch backendName(u) {
	case "sqlite":
		param, value = "synchronous", "normal"
	case "postgres":
		param, value = "synchronous_commit", "off"
	default:
		return u
	}
	pu, err := url.Parse(u)
	if err != nil || pu.Query().Has(param) {
		return u
	}
	q := pu.Query()
	q.Set(param, value)
	pu.RawQuery = q.Encode()
	return pu.String()
}

// sqlitePath is the file of a sqlite:// URL with an absolute path, ""
// for any other URL.
func sqlitePath(u string) string {
	if backendName(u) != "sqlite" {
		return ""
	}
	p, err := urlPath(u)
	if err != nil || !strings.HasPrefix(p, "/") || strings.HasPrefix(strings.TrimPrefix(p, "/"), ".") {
		return ""
	}
	return p
}
