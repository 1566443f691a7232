package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/internal/words"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/store/postgres"
)

// MemoryOptions configure RunMemory.
type MemoryOptions struct {
	// Stores are the store URLs whose long-term memory is measured; none
	// means a SQLite file in Dir, or in a temporary folder removed at the
	// end when Dir is "".
	Stores []string
	Dir    string
	// Items are the sizes to measure each store at, smallest first.
	Items []int
	// Refill puts the items again even where a fill of the same size is
	// there to reuse.
	Refill bool
	// Reps is how many puts, appends and searches of each kind are timed
	// per size (default 200).
	Reps int
	// Progress, when set, is told what is being done, about once a second
	// during a fill; Log the same at most every 30 seconds.
	Progress func(step string)
	Log      func(line string)

	prefix string // the items' namespace prefix; "bench" unless a test sets it
}

// MemoryReport is the result of RunMemory; its JSON form is what `cairn
// bench --memory --json` prints. Times are in milliseconds.
type MemoryReport struct {
	Results []MemoryResult `json:"results"`
	// Ratios compare, per store, the largest size with the smallest.
	Ratios []MemoryRatio `json:"ratios"`
}

// MemoryResult is what RunMemory measured on one store at one size.
type MemoryResult struct {
	Backend string `json:"backend"`
	Store   string `json:"store"` // the URL, without its password
	Items   int    `json:"items"`
	// Prefix is the namespace prefix the items are under: Items spread
	// over 100 namespaces PREFIX/u0 … PREFIX/u99.
	Prefix string    `json:"prefix"`
	Fill   ScaleFill `json:"fill"`
	// Put is a put of a new item of 20 words into the filled store;
	// Append the append of a ~1 KB event to a session of the same store,
	// timed in turn with the puts.
	Put    Latency `json:"put"`
	Append Latency `json:"append"`
	// SearchAll searches every item of the fill, SearchUser the items of
	// one namespace (a hundredth): two words of middling frequency, the
	// best 10. Found is how many results the searches returned in all.
	SearchAll  Latency `json:"search_all"`
	SearchUser Latency `json:"search_user"`
	Found      int     `json:"found"`
	Error      string  `json:"error,omitempty"` // why the store could not be measured
}

// MemoryRatio compares a store's largest size with its smallest: the
// targets are search ≤ 3× and put ≤ 2× append.
type MemoryRatio struct {
	Backend string `json:"backend"`
	Store   string `json:"store"`
	From    int    `json:"from_items"`
	To      int    `json:"to_items"`
	// SearchAll and SearchUser are the p50 at To over the p50 at From.
	SearchAll  float64 `json:"search_all"`
	SearchUser float64 `json:"search_user"`
	// PutOverAppend is the put p50 over the append p50, at To.
	PutOverAppend float64 `json:"put_over_append"`
}

// memoryFillVersion changes when what a fill holds does; a marker of
// another version makes the fill start again.
const memoryFillVersion = 1

// memoryFill is the marker item of a finished fill.
type memoryFill struct {
	Version int `json:"version"`
	Items   int `json:"items"`
}

// RunMemory fills each store's long-term memory with each number of
// items (or reuses an earlier fill) and times puts, searches and, beside
// them, session appends on the same store. The sizes are measured in
// turn, a put or search at each size before the next, so that a load that
// comes and goes falls on every size alike.
func RunMemory(ctx context.Context, opts MemoryOptions) (*MemoryReport, error) {
	if len(opts.Stores) == 0 {
		dir, cleanup, err := workDir(opts.Dir)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		opts.Stores = []string{"sqlite://" + filepath.ToSlash(filepath.Join(dir, "memory.db"))}
	}
	if err := checkSizes(opts.Items, "items"); err != nil {
		return nil, err
	}
	if opts.Reps <= 0 {
		opts.Reps = 200
	}
	opts.Progress, opts.Log = orIgnore(opts.Progress), orIgnore(opts.Log)
	if opts.prefix == "" {
		opts.prefix = "bench"
	}
	rep := &MemoryReport{Results: []MemoryResult{}, Ratios: []MemoryRatio{}}
	for _, u := range opts.Stores {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rs := make([]MemoryResult, len(opts.Items))
		for i, n := range opts.Items {
			rs[i] = MemoryResult{Backend: backendName(u), Store: text.RedactURL(u), Items: n,
				Prefix: fmt.Sprintf("%s/memory_%d", opts.prefix, n)}
		}
		if err := memoryStore(ctx, u, opts, rs); err != nil {
			for i := range rs {
				if rs[i].Error == "" {
					rs[i].Error = err.Error()
				}
			}
		}
		rep.Results = append(rep.Results, rs...)
		if first, last := rs[0], rs[len(rs)-1]; len(rs) > 1 && first.Error == "" && last.Error == "" {
			rep.Ratios = append(rep.Ratios, MemoryRatio{Backend: first.Backend, Store: first.Store, From: first.Items, To: last.Items,
				SearchAll:     round(ratio(last.SearchAll.P50MS, first.SearchAll.P50MS)),
				SearchUser:    round(ratio(last.SearchUser.P50MS, first.SearchUser.P50MS)),
				PutOverAppend: round(ratio(last.Put.P50MS, last.Append.P50MS))})
		}
	}
	return rep, nil
}

// memoryStore fills the store at u for every size of rs and measures it.
func memoryStore(ctx context.Context, u string, opts MemoryOptions, rs []MemoryResult) error {
	// Each size in a store of its own (sizeURL): a backend whose search
	// statistics are the store's would otherwise search every size with
	// the word counts of the sum of the fills. The session appends go to
	// the store at u, on the same server or in the same folder.
	lts := make([]longterm.Store, len(rs))
	for i := range rs {
		su := sizeURL(u, rs[i].Items)
		lt, err := longterm.Open(ctx, su, longterm.Options{})
		if err != nil {
			return fmt.Errorf("open %s: %w", text.RedactURL(su), err)
		}
		defer lt.Close()
		lts[i] = lt
	}
	s, err := cairn.Open(ctx, u, cairn.StoreOptions{Namespace: "bench_memory"})
	if err != nil {
		return fmt.Errorf("open %s: %w", text.RedactURL(u), err)
	}
	defer s.Close()
	for i := range rs {
		if err := fillMemory(ctx, lts[i], opts, &rs[i]); err != nil {
			rs[i].Error = err.Error()
		}
		if pl, ok := lts[i].(*postgres.LongTerm); ok && rs[i].Fill.Action == "filled" {
			// As vacuumAnalyze does for the sessions: the figures are
			// those of a server whose autovacuum has caught up.
			opts.Progress(rs[i].Backend + ": VACUUM ANALYZE")
			if _, err := pl.Pool().Exec(ctx, "VACUUM ANALYZE "+pgx.Identifier{pl.Schema(), "longterm_items"}.Sanitize()); err != nil {
				return fmt.Errorf("vacuum analyze longterm_items: %w", err)
			}
		}
	}
	// The appends go to a session of their own, made anew each run.
	w := &appender{s: s, id: cairn.NewID()}
	if err := s.Create(ctx, cairn.SessionMeta{ID: w.id}); err != nil {
		return fmt.Errorf("create the appends' session: %w", err)
	}
	defer s.Delete(context.WithoutCancel(ctx), w.id)
	vocab := words.New(7)
	puts := make([][]time.Duration, len(rs))
	appends := make([][]time.Duration, len(rs))
	alls := make([][]time.Duration, len(rs))
	users := make([][]time.Duration, len(rs))
	opts.Log(fmt.Sprintf("%s: %d puts, appends and searches at each size", rs[0].Backend, opts.Reps))
	for rep := range opts.Reps {
		if rep%20 == 0 {
			opts.Progress(fmt.Sprintf("%s: put, append and search %d of %d", rs[0].Backend, rep+1, opts.Reps))
		}
		for i := range rs {
			if rs[i].Error != "" {
				continue
			}
			err := func() error {
				it := longterm.Item{Namespace: rs[i].Prefix + "/put", Key: fmt.Sprint("p", rep), Text: vocab.Text(20)}
				t0 := time.Now()
				if _, err := lts[i].Put(ctx, it, longterm.PutOptions{}); err != nil {
					return fmt.Errorf("put: %w", err)
				}
				puts[i] = append(puts[i], time.Since(t0))
				d, err := w.run(ctx, func(n int) bool { return n < 1 })
				if err != nil {
					return fmt.Errorf("append: %w", err)
				}
				appends[i] = append(appends[i], d...)
				for _, sub := range []string{"", fmt.Sprint("/u", rep%100)} {
					q := vocab.Query()
					t0 := time.Now()
					found, err := lts[i].Search(ctx, longterm.SearchOptions{Query: q, Prefix: rs[i].Prefix + sub, Limit: 10})
					if err != nil {
						return fmt.Errorf("search: %w", err)
					}
					if sub == "" {
						alls[i] = append(alls[i], time.Since(t0))
					} else {
						users[i] = append(users[i], time.Since(t0))
					}
					rs[i].Found += len(found)
				}
				return nil
			}()
			if err != nil {
				rs[i].Error = err.Error()
			}
		}
	}
	for i := range rs {
		rs[i].Put, rs[i].Append = latency(puts[i]), latency(appends[i])
		rs[i].SearchAll, rs[i].SearchUser = latency(alls[i]), latency(users[i])
		if _, err := lts[i].DeleteNamespace(context.WithoutCancel(ctx), rs[i].Prefix+"/put"); err != nil && rs[i].Error == "" {
			rs[i].Error = fmt.Sprintf("delete the timed puts: %v", err)
		}
	}
	return nil
}

// sizeURL returns the URL of the store for the fill of n items, so that
// each size is a store of its own: u with the namespace bench_memory_N
// for the server backends (postgres, redis, mongodb), the file or folder
// of u with -N before its extension for sqlite and file (a search's
// statistics are its store's: a fill of 1,000 that shares a file with one
// of 100,000 is searched with the other's word counts), u itself for
// memory.
func sizeURL(u string, n int) string {
	switch backendName(u) {
	case "postgres", "redis", "mongodb":
	case "sqlite", "file":
		rest, query, _ := strings.Cut(u, "?")
		ext := path.Ext(rest)
		if strings.ContainsAny(ext, "/:") {
			ext = ""
		}
		sized := strings.TrimSuffix(rest, ext) + fmt.Sprintf("-%d", n) + ext
		if query != "" {
			sized += "?" + query
		}
		return sized
	default:
		return u
	}
	pu, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := pu.Query()
	base := q.Get("namespace")
	if base == "" {
		base = "bench"
	}
	q.Set("namespace", fmt.Sprintf("%s_memory_%d", base, n))
	pu.RawQuery = q.Encode()
	return pu.String()
}

// fillMemory makes the store hold res.Items items under res.Prefix: the
// fill a marker item records, or a fill made now, by four writers, whose
// marker is written last.
func fillMemory(ctx context.Context, lt longterm.Store, opts MemoryOptions, res *MemoryResult) error {
	markerNS, markerKey := opts.prefix+"/fills", fmt.Sprint("memory_", res.Items)
	say := func(s string) { opts.Progress(res.Backend + " " + thousands(res.Items) + " items: " + s) }
	if !opts.Refill {
		m, err := lt.Get(ctx, markerNS, markerKey)
		switch {
		case err == nil:
			var f memoryFill
			if json.Unmarshal(m.Value, &f) == nil && f.Version == memoryFillVersion && f.Items == res.Items {
				res.Fill = ScaleFill{Action: "reused"}
				return nil
			}
		case !errors.Is(err, longterm.ErrNotFound):
			return fmt.Errorf("read the fill's marker: %w", err)
		}
	}
	opts.Log(fmt.Sprintf("%s: filling %s items", res.Backend, thousands(res.Items)))
	say("removing an earlier fill")
	if _, err := lt.DeleteNamespace(ctx, res.Prefix); err != nil {
		return fmt.Errorf("remove an earlier fill: %w", err)
	}
	var next, done atomic.Int64
	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			vocab := words.New(uint64(100 + g))
			for {
				i := next.Add(1) - 1
				if i >= int64(res.Items) || ctx.Err() != nil {
					return
				}
				it := longterm.Item{Namespace: fmt.Sprintf("%s/u%d", res.Prefix, i%100), Key: fmt.Sprint("k", i), Text: vocab.Text(10 + int(i%21))}
				if _, err := lt.Put(ctx, it, longterm.PutOptions{}); err != nil {
					cancel(fmt.Errorf("fill, item %d: %w", i, err))
					return
				}
				done.Add(1)
			}
		})
	}
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				line := fmt.Sprintf("filled %s of %s", thousands(int(done.Load())), thousands(res.Items))
				say(line)
				if n%30 == 29 {
					opts.Log(res.Backend + ": " + line)
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	if err := context.Cause(ctx); err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	res.Fill = ScaleFill{Action: "filled", Written: res.Items, Seconds: round(secs), PerSecond: round(float64(res.Items) / secs)}
	v, _ := json.Marshal(memoryFill{Version: memoryFillVersion, Items: res.Items})
	if _, err := lt.Put(ctx, longterm.Item{Namespace: markerNS, Key: markerKey, Value: v}, longterm.PutOptions{}); err != nil {
		return fmt.Errorf("write the fill's marker: %w", err)
	}
	return nil
}

// WriteMemoryTable writes rep for people: a table per store, a row per
// size, and the ratios against their targets.
func WriteMemoryTable(w io.Writer, rep *MemoryReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\titems\tfill\tput p50\tappend p50\tsearch all p50\tp99\tsearch one ns p50\tp99\tresults\t")
	for _, r := range rep.Results {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t\t\t\t\t\n", r.Backend, thousands(r.Items))
			continue
		}
		fill := r.Fill.Action
		if r.Fill.Action == "filled" {
			fill = fmt.Sprintf("%.0f/s", r.Fill.PerSecond)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s ms\t%s ms\t%s ms\t%s ms\t%s ms\t%s ms\t%d\t\n", r.Backend, thousands(r.Items), fill,
			ms(r.Put.P50MS), ms(r.Append.P50MS), ms(r.SearchAll.P50MS), ms(r.SearchAll.P99MS),
			ms(r.SearchUser.P50MS), ms(r.SearchUser.P99MS), r.Found)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rep.Results {
		if r.Error != "" {
			fmt.Fprintf(w, "%s, %s items: %s\n", r.Backend, thousands(r.Items), r.Error)
		}
	}
	for _, r := range rep.Ratios {
		fmt.Fprintf(w, "%s: search at %s items ÷ at %s: all %.2f, one namespace %.2f (target ≤ 3); put ÷ append %.2f (target ≤ 2)\n",
			r.Backend, thousands(r.To), thousands(r.From), r.SearchAll, r.SearchUser, r.PutOverAppend)
	}
	return nil
}
