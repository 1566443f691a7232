package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/sqlite"
)

// options are run's and load's flags.
type options struct {
	store       string
	path        string
	synchronous string
	postgres    string
	namespace   string
	turns       int
	loads       int
	latencies   bool
	keep        bool
}

func (o *options) flags(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet("longconv "+cmd, flag.ContinueOnError)
	fs.StringVar(&o.store, "store", "sqlite", "sqlite or postgres")
	fs.StringVar(&o.path, "path", "longconv.db", "the sqlite database file")
	fs.StringVar(&o.synchronous, "synchronous", "full", "sqlite: full (the store's default) or normal")
	fs.StringVar(&o.postgres, "postgres", defaultPostgres(), "PostgreSQL URL")
	fs.StringVar(&o.namespace, "namespace", "bench_longconv", "postgres: the store's namespace (its schema is dropped before and after)")
	fs.IntVar(&o.turns, "turns", 1000, "turns of the conversation")
	fs.IntVar(&o.loads, "loads", 3, "fresh processes that load the thread")
	fs.BoolVar(&o.latencies, "latencies", false, "add every turn's latency to the output")
	fs.BoolVar(&o.keep, "keep", false, "postgres: keep the namespace's schema")
	return fs
}

func (o *options) check() error {
	if o.store != "sqlite" && o.store != "postgres" {
		return fmt.Errorf("-store %q: want sqlite or postgres", o.store)
	}
	if s := strings.ToLower(o.synchronous); s != "full" && s != "normal" {
		return fmt.Errorf("-synchronous %q: want full or normal", o.synchronous)
	}
	if o.turns < 1 {
		return fmt.Errorf("-turns %d: want at least 1", o.turns)
	}
	return nil
}

// Result is what run prints, in the shape of bench/langgraph/bench.js's.
type Result struct {
	System       string             `json:"system"`
	Versions     map[string]string  `json:"versions"`
	Store        string             `json:"store"`
	Turns        int                `json:"turns"`
	Messages     int                `json:"messages"`
	Conversation string             `json:"conversation_sha256"`
	RunSeconds   float64            `json:"run_seconds"`
	TurnP50      map[string]float64 `json:"turn_p50_ms"`
	ToolTurnP50  map[string]float64 `json:"tool_turn_p50_ms"`
	Windows      map[string][2]int  `json:"windows"`
	Durability   map[string]string  `json:"durability"`
	BytesStored  int64              `json:"bytes_stored"`
	BytesDetail  map[string]int64   `json:"bytes_detail"`
	Latencies    []float64          `json:"latencies_ms,omitempty"`
	Load         Loads              `json:"load"`
}

// Loads are the fresh processes' load times: each process's own (opening
// the store to holding the thread's state) and its wall time from outside.
type Loads struct {
	LoadMS    float64    `json:"load_ms"`
	ProcessMS float64    `json:"process_ms"`
	Runs      []LoadTime `json:"runs"`
}

// LoadTime is one fresh process's.
type LoadTime struct {
	LoadMS    float64 `json:"load_ms"`
	ProcessMS float64 `json:"process_ms"`
}

func newAgent(st cairn.Store) *agent.Agent {
	return &agent.Agent{
		Name:         "long-conversation",
		Instructions: instructions,
		Model:        model{},
		Tools:        []*agent.Tool{lookup()},
		Store:        st,
		OnError:      agent.Fail, // an outage stops the benchmark instead of going on in memory
		// LangGraph's messages reducer keeps every message: so does cairn's
		// agent here, without compaction (snapshots stay at their default).
		Compaction: agent.CompactOff,
	}
}

// openStore opens the store o names; fresh drops what an earlier run left.
func openStore(ctx context.Context, o options, fresh bool) (cairn.Store, error) {
	if o.store == "sqlite" {
		if fresh {
			for _, f := range []string{o.path, o.path + "-wal", o.path + "-shm"} {
				if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
					return nil, err
				}
			}
		}
		return sqlite.Open(ctx, o.path, sqlite.Options{Synchronous: o.synchronous})
	}
	if fresh {
		if err := dropSchema(ctx, o.postgres, postgres.Schema(o.namespace)); err != nil {
			return nil, err
		}
	}
	return postgres.Open(ctx, o.postgres, cairn.StoreOptions{Namespace: o.namespace})
}

func dropSchema(ctx context.Context, url, schema string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
	return err
}

func run(ctx context.Context, o options) (*Result, error) {
	st, err := openStore(ctx, o, true)
	if err != nil {
		return nil, err
	}
	closed := false
	defer func() {
		if !closed {
			_ = st.Close()
		}
	}()
	a := newAgent(st)
	s, err := a.Open(ctx, threadID)
	if err != nil {
		return nil, err
	}
	lat := make([]float64, 0, o.turns)
	t0 := time.Now()
	for n := 1; n <= o.turns; n++ {
		t := time.Now()
		res, err := s.Run(ctx, text("user", n), agent.Continue())
		lat = append(lat, float64(time.Since(t).Nanoseconds())/1e6)
		if err != nil {
			return nil, fmt.Errorf("turn %d: %w", n, err)
		}
		if res.Status != cairn.StatusCompleted || res.Output != text("answer", n) {
			return nil, fmt.Errorf("turn %d: the run ended %s without the answer of turn %d", n, res.Status, n)
		}
	}
	r := &Result{
		System: "cairn", Versions: versions(), Store: o.store, Turns: o.turns, Messages: messagesAfter(o.turns),
		Conversation: conversationSum(o.turns), RunSeconds: round3(time.Since(t0).Seconds()),
		TurnP50: map[string]float64{}, ToolTurnP50: map[string]float64{}, Windows: map[string][2]int{},
	}
	for _, m := range marks {
		if m > o.turns {
			continue
		}
		from := max(1, m-window+1)
		var all, tool []float64
		for i := from; i <= m; i++ {
			all = append(all, lat[i-1])
			if i%3 == 0 {
				tool = append(tool, lat[i-1])
			}
		}
		k := strconv.Itoa(m)
		r.Windows[k] = [2]int{from, m}
		r.TurnP50[k] = round3(median(all))
		r.ToolTurnP50[k] = round3(median(tool))
	}
	if o.latencies {
		for _, l := range lat {
			r.Latencies = append(r.Latencies, round3(l))
		}
	}
	if o.store == "sqlite" {
		closed = true
		if err := st.Close(); err != nil {
			return nil, err
		}
		if err := sqliteBytes(ctx, o, r); err != nil {
			return nil, err
		}
	} else {
		pg := st.(*postgres.Store)
		if err := postgresBytes(ctx, pg.Pool(), pg.Schema(), r); err != nil {
			return nil, err
		}
		closed = true
		if err := st.Close(); err != nil {
			return nil, err
		}
	}
	if r.Load, err = loads(o); err != nil {
		return nil, err
	}
	if o.store == "postgres" && !o.keep {
		if err := dropSchema(ctx, o.postgres, postgres.Schema(o.namespace)); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// sqliteBytes checkpoints the WAL into the database file (TRUNCATE) and
// reports the sizes of both.
func sqliteBytes(ctx context.Context, o options, r *Result) error {
	db, err := sql.Open("sqlite", o.path)
	if err != nil {
		return err
	}
	var busy, logged, moved int
	err = db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &moved)
	var mode, version string
	if err == nil {
		err = db.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&version)
	}
	if err == nil {
		err = db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", o.path, err)
	}
	size := func(f string) int64 {
		fi, err := os.Stat(f)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	r.BytesDetail = map[string]int64{"db": size(o.path), "wal": size(o.path + "-wal")}
	r.BytesStored = r.BytesDetail["db"] + r.BytesDetail["wal"]
	r.Versions["sqlite"] = version
	r.Durability = map[string]string{
		"journal_mode": mode,
		"synchronous":  strings.ToUpper(o.synchronous),
		"commits":      "one transaction per append (appends waiting together share one), one append per step",
	}
	return nil
}

// postgresBytes sums pg_total_relation_size (table, indexes, TOAST) of the
// schema's tables.
func postgresBytes(ctx context.Context, pool *pgxpool.Pool, schema string, r *Result) error {
	rows, err := pool.Query(ctx, `SELECT c.relname, pg_total_relation_size(c.oid)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY c.relname`, schema)
	if err != nil {
		return err
	}
	r.BytesDetail = map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return err
		}
		r.BytesDetail[name] = n
		r.BytesStored += n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var version, syncCommit, fsync string
	if err := pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('synchronous_commit'), current_setting('fsync')`).
		Scan(&version, &syncCommit, &fsync); err != nil {
		return err
	}
	r.Versions["postgresql"] = version
	r.Durability = map[string]string{
		"synchronous_commit": syncCommit,
		"fsync":              fsync,
		"commits":            "one transaction per append, one append per step",
	}
	return nil
}

// loads times o.loads fresh processes of this program that each load the
// thread.
func loads(o options) (Loads, error) {
	self, err := os.Executable()
	if err != nil {
		return Loads{}, err
	}
	args := []string{"load", "-store", o.store, "-turns", strconv.Itoa(o.turns)}
	if o.store == "sqlite" {
		args = append(args, "-path", o.path, "-synchronous", o.synchronous)
	} else {
		args = append(args, "-postgres", o.postgres, "-namespace", o.namespace)
	}
	var l Loads
	var in, wall []float64
	for range o.loads {
		cmd := exec.Command(self, args...)
		cmd.Stderr = os.Stderr
		t := time.Now()
		out, err := cmd.Output()
		ms := float64(time.Since(t).Nanoseconds()) / 1e6
		if err != nil {
			return l, fmt.Errorf("load process: %w", err)
		}
		var lt LoadTime
		if err := json.Unmarshal(out, &lt); err != nil {
			return l, fmt.Errorf("load process: %w", err)
		}
		lt.ProcessMS = round3(ms)
		l.Runs = append(l.Runs, lt)
		in, wall = append(in, lt.LoadMS), append(wall, lt.ProcessMS)
	}
	l.LoadMS, l.ProcessMS = round3(median(in)), round3(median(wall))
	return l, nil
}

// load opens the store and resumes the thread, as a program that continues
// it would, and checks what it holds.
func load(ctx context.Context, o options) (*LoadTime, error) {
	t := time.Now()
	st, err := openStore(ctx, o, false)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	s, err := newAgent(st).Resume(ctx, threadID)
	if err != nil {
		return nil, err
	}
	state := s.State()
	ms := float64(time.Since(t).Nanoseconds()) / 1e6
	if got, want := len(state.Messages), messagesAfter(o.turns); got != want {
		return nil, fmt.Errorf("loaded %d messages, want %d", got, want)
	}
	if state.Messages[len(state.Messages)-1].Content != text("answer", o.turns) {
		return nil, fmt.Errorf("the last message loaded is not the answer of turn %d", o.turns)
	}
	return &LoadTime{LoadMS: round3(ms)}, nil
}

// versions names what ran: Go, the commit of cairn when the binary knows
// it, and the storage drivers.
func versions() map[string]string {
	v := map[string]string{"go": runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v["cairn"] = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					v["cairn_modified"] = "true"
				}
			}
		}
		for _, d := range bi.Deps {
			switch d.Path {
			case "modernc.org/sqlite", "github.com/jackc/pgx/v5":
				v[d.Path] = d.Version
			}
		}
	}
	return v
}
