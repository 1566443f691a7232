// Command dbos measures, side by side on the same PostgreSQL in one run,
// what DBOS Transact Go costs to checkpoint one workflow step per agent
// step against what cairn's postgres store costs to Append the same step.
//
// Inside one DBOS workflow, each agent step is one dbos.RunAsStep whose
// output (the step's ~1 KB event) DBOS checkpoints, followed by one
// cairn Append of that event; both are timed, so both see the same load.
// It prints JSON: the medians and 99th percentiles of both and their ratio.
//
//	go run ./dbos -steps 2000
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/bench"
	"github.com/cairnhq/cairn/store/postgres"
)

// Result is what the program prints.
type Result struct {
	Steps         int     `json:"steps"`
	DBOSStepP50   float64 `json:"dbos_step_p50_us"`
	DBOSStepP99   float64 `json:"dbos_step_p99_us"`
	CairnP50      float64 `json:"cairn_append_p50_us"`
	CairnP99      float64 `json:"cairn_append_p99_us"`
	CairnOverDBOS float64 `json:"cairn_over_dbos"` // cairn p50 / DBOS p50
}

func main() {
	def := os.Getenv("CAIRN_TEST_POSTGRES")
	if def == "" {
		def = bench.DefaultPostgres
	}
	url := flag.String("postgres", def, "PostgreSQL URL")
	steps := flag.Int("steps", 2000, "agent steps in the workflow and the session")
	flag.Parse()
	res, err := run(context.Background(), *url, *steps)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dbos bench:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(res)
}

type input struct {
	Session string
	Steps   int
}

type timings struct{ dbos, cairn []time.Duration }

func run(ctx context.Context, url string, steps int) (*Result, error) {
	suffix := strings.ToLower(cairn.NewID()[len(cairn.NewID())-8:])
	schema := "bench_dbos_" + suffix
	store, err := postgres.Open(ctx, url, cairn.StoreOptions{Namespace: "bench_" + suffix})
	if err != nil {
		return nil, err
	}
	defer func() {
		_, _ = store.Pool().Exec(context.WithoutCancel(ctx), `DROP SCHEMA `+pgx.Identifier{store.Schema()}.Sanitize()+` CASCADE`)
		store.Close()
	}()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	defer pool.Exec(context.WithoutCancel(ctx), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)

	dctx, err := dbos.NewContext(ctx, dbos.Config{AppName: "cairn-bench", DatabaseURL: url, DatabaseSchema: schema,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, fmt.Errorf("dbos: %w", err)
	}
	defer dbos.Shutdown(dctx, 10*time.Second)
	var t timings
	workflow := func(wctx dbos.Context, in input) (int, error) {
		for seq := int64(1); seq <= int64(in.Steps); seq++ {
			t0 := time.Now()
			e, err := dbos.RunAsStep(wctx, func(context.Context) (cairn.Event, error) { return bench.Event(seq), nil },
				dbos.WithStepName(fmt.Sprint("step-", seq)))
			if err != nil {
				return 0, err
			}
			t1 := time.Now()
			if err := store.Append(wctx, in.Session, seq-1, e); err != nil {
				return 0, err
			}
			t.dbos, t.cairn = append(t.dbos, t1.Sub(t0)), append(t.cairn, time.Since(t1))
		}
		return in.Steps, nil
	}
	dbos.RegisterWorkflow(dctx, workflow)
	if err := dbos.Launch(dctx); err != nil {
		return nil, fmt.Errorf("dbos launch: %w", err)
	}
	id := "dbos-" + suffix
	if err := store.Create(ctx, cairn.SessionMeta{ID: id}); err != nil {
		return nil, err
	}
	h, err := dbos.RunWorkflow(dctx, workflow, input{Session: id, Steps: steps})
	if err != nil {
		return nil, fmt.Errorf("dbos run: %w", err)
	}
	n, err := h.GetResult()
	if err != nil {
		return nil, fmt.Errorf("dbos workflow: %w", err)
	}
	if n != steps || len(t.dbos) != steps {
		return nil, errors.New("the workflow did not run every step")
	}
	r := &Result{Steps: steps, DBOSStepP50: pct(t.dbos, 50), DBOSStepP99: pct(t.dbos, 99),
		CairnP50: pct(t.cairn, 50), CairnP99: pct(t.cairn, 99)}
	r.CairnOverDBOS = float64(int(r.CairnP50/r.DBOSStepP50*1000)) / 1000
	return r, nil
}

func pct(d []time.Duration, p int) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[min(len(s)-1, len(s)*p/100)].Microseconds())
}
