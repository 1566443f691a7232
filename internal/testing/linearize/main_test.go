package linearize

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/fault"
	"github.com/cairnhq/cairn/internal/testing/testenv"
)

var long = flag.Bool("long", false, "the long run: many more operations and faults on each backend (also CAIRN_LINEARIZE_LONG=1)")

func isLong() bool { return *long || os.Getenv("CAIRN_LINEARIZE_LONG") == "1" }

// childEnv holds a childConfig: the test binary started with it is a
// client process of a file or sqlite store.
const childEnv = "CAIRN_LINEARIZE_CHILD"

// childConfig is what a client process runs.
type childConfig struct {
	URL      string        `json:"url"`
	NS       string        `json:"ns"`
	Sessions []string      `json:"sessions"`
	Client   int           `json:"client"`
	Seed     uint64        `json:"seed"`
	TTL      time.Duration `json:"ttl"`
	Timeout  time.Duration `json:"timeout"`
}

func TestMain(m *testing.M) {
	testenv.QuickRaceExit()
	if cfg := os.Getenv(childEnv); cfg != "" {
		os.Exit(child(cfg))
	}
	flag.Parse()
	code := m.Run()
	fault.RemoveBuilds()
	os.Exit(code)
}

// child runs one client on the store of cfg, streaming its calls and
// returns to stdout, until stdin closes (or a signal ends it).
func child(cfg string) int {
	var c childConfig
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	var stop atomic.Bool
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop.Store(true)
	}()
	st, err := cairn.Open(context.Background(), c.URL, cairn.StoreOptions{Namespace: c.NS})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 1
	}
	defer st.Close()
	cl := &Client{
		ID: c.Client, Store: st, Sessions: c.Sessions, Rec: NewStream(os.Stdout),
		Rand: rand.New(rand.NewPCG(c.Seed, uint64(c.Client))), TTL: c.TTL, Timeout: c.Timeout,
	}
	for !stop.Load() {
		cl.Step(context.Background())
	}
	return 0
}
