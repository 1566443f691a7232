package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/internal/bench"
	"github.com/cairnhq/cairn/internal/cli"
)

func newBenchCmd(app *cli.App) *cobra.Command {
	var (
		stores   []string
		quick    bool
		dir      string
		sessions string
		refill   bool
		long     bool
		noLong   bool
		memory   string
	)
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure the stores: append latency, resume, size, concurrency, against their floors",
		Long: `Measure each store against the cheapest durable write of its kind, in one run:
Append p50 and p99 at history lengths 10 and 10,000 beside the backend's bare
single write; resume (load and fold) of 1,000 and 20,000 events beside reading
the same bytes back and decoding them plainly; stored bytes per event; the
process's CPU time and allocations per append beside the floor's, and the
append's own CPU over its floor (rounds of each, taken in turn); 8 and 64
sessions appending at once against 1; the agent on a long conversation (1 KB
turns, a tool call every third turn): a turn at turn 10 and at turn 3,000 in
one process, the largest request sent to the model, and opening a session of
10, 1,000 and 10,000 turns with one more turn; and, over 1,000 steps, cairn
against rewriting the whole memory after every step. --long measures only
the long conversation; --no-long leaves it out, which takes a fraction of
the time (the appends, CPU, resume and concurrency figures only).

With no --store it measures memory, and file and sqlite stores in a temporary
folder, and PostgreSQL, Redis and MongoDB from CAIRN_TEST_POSTGRES,
CAIRN_TEST_REDIS and CAIRN_TEST_MONGODB, or at their default local addresses
when reachable. Each server store works in a namespace of its own, removed at
the end. docs/PERFORMANCE.md describes the method.

With --sessions N (or N,M,… for several sizes), it measures instead what the
commands cost in a store of N sessions: it fills each --store with N
realistic sessions (4 events, ~1 KB each, over 30 days; mixed statuses; a
tenth labelled, a tenth expired; each question with words of its own and an
order number no other session has) in a namespace bench_scale_N, or reuses
the fill already there, and times the first page of the list, status and
label filters, the 20th page, show, a mistyped ID, a prefix, a search for
one session's order number (cairn sessions search), delete, and last gc of
the expired tenth while a writer appends. docs/SCALING.md describes it.

With --memory (1,000, 10,000 and 100,000 items; or --memory N,M,…), it
measures long-term memory instead: it puts N items of 10 to 30 words into
100 namespaces under bench/memory_N of a store of its own for each size
and --store (a SQLite file or folder with -N added, memory-1000.db; the
namespace bench_memory_N on a server; a SQLite file in a temporary folder
when no --store is given), or reuses the fill already there, and times a
put beside a session append on the same store, and a search (two words of
middling frequency, the best 10) of all the items and of one namespace,
the sizes taken in turn. The targets: search at the largest size within
3× the smallest, a put within 2× an append. Remove the fills with cairn
memory delete bench --yes, or the files.`,
		Example: `  cairn bench
  cairn bench --long --store sqlite:long.db --json
  cairn bench --sessions 10000,100000 --store sqlite:scale.db --store postgres://localhost/cairn
  cairn bench --memory --store sqlite:memory.db --store postgres://localhost/cairn`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if memory != "" {
				if sessions != "" || long || noLong {
					return &cli.Error{Err: errors.New("--memory measures long-term memory alone"), Hint: "leave out --sessions, --long and --no-long", Code: cli.ExitUsage}
				}
				return benchMemory(c, app, stores, memory, refill, quick, dir)
			}
			if sessions != "" {
				return benchScale(c, app, stores, sessions, refill, quick, dir)
			}
			if refill {
				return &cli.Error{Err: errors.New("--refill is for a scale benchmark"), Hint: "give --sessions N with it", Code: cli.ExitUsage}
			}
			if long && noLong {
				return &cli.Error{Err: errors.New("--long and --no-long exclude each other"), Hint: "give one of them", Code: cli.ExitUsage}
			}
			opts := bench.Options{Stores: stores, Quick: quick, Dir: dir, LongOnly: long, NoLong: noLong}
			terminal := cli.IsTerminal(app.Stderr)
			opts.Progress = func(step string) {
				if terminal {
					fmt.Fprintf(app.Stderr, "\r\033[Kbench: %s…", step)
				} else {
					fmt.Fprintf(app.Stderr, "bench: %s\n", step)
				}
			}
			rep, err := bench.Run(c.Context(), opts)
			return benchReport(app, terminal, rep, err, bench.WriteTable)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&stores, "store", nil, "store URL to measure (repeat for several; default: every backend reachable)")
	f.BoolVar(&quick, "quick", false, "fewer samples: a smoke check in well under two minutes")
	f.StringVar(&dir, "dir", "", "folder for the file and sqlite stores (default: a temporary one, removed afterwards)")
	f.StringVar(&sessions, "sessions", "", "measure the commands in stores of this many sessions (N, or N,M,… for several sizes; needs --store)")
	f.BoolVar(&long, "long", false, "measure only the agent on a long conversation (agent_turn_us, open_ms)")
	f.BoolVar(&noLong, "no-long", false, "leave the long conversation out: appends, CPU, resume and concurrency only")
	f.StringVar(&memory, "memory", "", "measure long-term memory's put and search at these numbers of items (N,M,…)")
	f.Lookup("memory").NoOptDefVal = "1000,10000,100000"
	f.BoolVar(&refill, "refill", false, "with --sessions or --memory: fill the stores again even where a fill of that size is there")
	return c
}

// benchScale is `cairn bench --sessions`.
func benchScale(c *cobra.Command, app *cli.App, stores []string, sessions string, refill, quick bool, dir string) error {
	usage := func(err error, hint string) error { return &cli.Error{Err: err, Hint: hint, Code: cli.ExitUsage} }
	if len(stores) == 0 {
		return usage(errors.New("--sessions needs the stores to fill"), "give --store URL (repeat for several), e.g. --store sqlite:scale.db")
	}
	if dir != "" {
		return usage(errors.New("--dir is not for --sessions"), "put the SQLite file where you want it in its --store URL")
	}
	sizes, err := parseSizes("--sessions", "sessions", sessions)
	if err != nil {
		return usage(err, "give --sessions 10000, or several sizes as 10000,100000")
	}
	opts := bench.ScaleOptions{Stores: stores, Sessions: sizes, Refill: refill}
	if quick {
		opts.Reps = 3
	}
	opts.Progress, opts.Log = benchOutput(app)
	rep, err := bench.RunScale(c.Context(), opts)
	return benchReport(app, opts.Progress != nil, rep, err, bench.WriteScaleTable)
}

// benchMemory is `cairn bench --memory`.
func benchMemory(c *cobra.Command, app *cli.App, stores []string, memory string, refill, quick bool, dir string) error {
	usage := func(err error, hint string) error { return &cli.Error{Err: err, Hint: hint, Code: cli.ExitUsage} }
	sizes, err := parseSizes("--memory", "items", memory)
	if err != nil {
		return usage(err, "give --memory alone for 1,000, 10,000 and 100,000 items, or sizes as --memory=1000,10000")
	}
	if len(stores) > 0 && dir != "" {
		return usage(errors.New("--dir is for the SQLite file made when no --store is given"), "put the SQLite file where you want it in its --store URL")
	}
	opts := bench.MemoryOptions{Stores: stores, Items: sizes, Refill: refill, Dir: dir}
	if quick {
		opts.Reps = 30
	}
	opts.Progress, opts.Log = benchOutput(app)
	rep, err := bench.RunMemory(c.Context(), opts)
	if err := benchReport(app, opts.Progress != nil, rep, err, bench.WriteMemoryTable); err != nil {
		return err
	}
	for _, r := range rep.Results {
		if r.Error == "" {
			return nil
		}
	}
	return cli.Fail(errors.New("bench: no store could be measured"), "the report says why for each; check a store with `cairn doctor --store URL`")
}

// benchOutput returns how a scale or memory benchmark tells what it does:
// on a terminal, a line rewritten as it goes (progress); else a line of
// stderr now and then (log).
func benchOutput(app *cli.App) (progress, log func(string)) {
	if cli.IsTerminal(app.Stderr) {
		return func(step string) { fmt.Fprintf(app.Stderr, "\r\033[Kbench: %s…", step) }, nil
	}
	return nil, func(line string) { fmt.Fprintf(app.Stderr, "bench: %s\n", line) }
}

// benchReport ends a benchmark that err ended or that made rep: it clears
// the progress line (if one was shown) and prints the report, as JSON or
// as table writes it for people.
func benchReport[R any](app *cli.App, progress bool, rep R, err error, table func(io.Writer, R) error) error {
	if progress {
		fmt.Fprint(app.Stderr, "\r\033[K")
	}
	if err != nil {
		return cli.Fail(fmt.Errorf("bench: %w", err), "check the stores with `cairn doctor --store URL`")
	}
	if app.Flags.JSON {
		return cli.WriteJSON(app.Stdout, rep)
	}
	return table(app.Stdout, rep)
}

// parseSizes parses the value s of flag, a number of what: one number, or
// several separated by commas, returned smallest first.
func parseSizes(flag, what, s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 100 {
			return nil, fmt.Errorf("%s %q: %q is not a number of %s of 100 or more", flag, s, f, what)
		}
		sizes = append(sizes, n)
	}
	slices.Sort(sizes)
	return slices.Compact(sizes), nil
}
