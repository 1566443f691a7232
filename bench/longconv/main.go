// Command longconv runs one long conversation through cairn's agent and
// through LangGraph.js (bench/langgraph), on the same SQLite durability and
// the same PostgreSQL, and reports a turn's latency as the thread grows, the
// bytes each stores, and the time a fresh process takes to load the thread.
//
//	longconv run -store sqlite -path DIR/cairn.db [-synchronous full|normal]
//	longconv run -store postgres [-postgres URL]
//	longconv compare -langgraph ../langgraph [-rounds 2]
//
// run is cairn's side, one configuration; it prints one JSON document in
// the shape bench/langgraph/bench.js prints. compare is the driver: it runs
// both sides in every configuration, alternating which goes first, and
// prints their runs and medians. load (a child of run) loads the thread.
package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/cairnhq/cairn/internal/bench"
)

// Marks and windows: the p50 at mark m is the median of the turns
// max(1, m-window+1) … m.
var marks = []int{10, 100, 1000}

const window = 20

// defaultPostgres is the PostgreSQL URL of the -postgres flags when none is
// given: CAIRN_TEST_POSTGRES, else bench.DefaultPostgres.
func defaultPostgres() string {
	return cmp.Or(os.Getenv("CAIRN_TEST_POSTGRES"), bench.DefaultPostgres)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: longconv run|load|compare [flags]")
		os.Exit(2)
	}
	var (
		out any
		err error
	)
	ctx := context.Background()
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "run", "load":
		var o options
		fs := o.flags(cmd)
		if err := fs.Parse(args); err != nil {
			os.Exit(2)
		}
		if err = o.check(); err == nil {
			if cmd == "run" {
				out, err = run(ctx, o)
			} else {
				out, err = load(ctx, o)
			}
		}
	case "compare":
		var c compareOptions
		fs := c.flags()
		if err := fs.Parse(args); err != nil {
			os.Exit(2)
		}
		out, err = compare(ctx, c)
	default:
		fmt.Fprintf(os.Stderr, "longconv: unknown command %q: want run, load or compare\n", cmd)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "longconv:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "longconv:", err)
		os.Exit(1)
	}
}

// conversationSum is the SHA-256 of every text of the first n turns, in
// order: both sides report it, and compare refuses runs whose sums differ.
func conversationSum(n int) string {
	h := sha256.New()
	for i := 1; i <= n; i++ {
		h.Write([]byte(text("user", i)))
		if i%3 == 0 {
			h.Write([]byte(text("result", i)))
		}
		h.Write([]byte(text("answer", i)))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }
