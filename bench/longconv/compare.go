package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

type compareOptions struct {
	langgraph string
	node      string
	postgres  string
	dir       string
	rounds    int
	turns     int
	loads     int
	only      string
}

func (c *compareOptions) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("longconv compare", flag.ContinueOnError)
	fs.StringVar(&c.langgraph, "langgraph", "langgraph", "the folder of bench/langgraph, with its node_modules installed")
	fs.StringVar(&c.node, "node", "node", "the Node.js program")
	fs.StringVar(&c.postgres, "postgres", defaultPostgres(), "PostgreSQL URL")
	fs.StringVar(&c.dir, "dir", "", "folder for the SQLite files (default: a temporary one, removed after)")
	fs.IntVar(&c.rounds, "rounds", 2, "runs of each side in each configuration, alternating which goes first")
	fs.IntVar(&c.turns, "turns", 1000, "turns of the conversation")
	fs.IntVar(&c.loads, "loads", 3, "fresh processes that load the thread, per run")
	fs.StringVar(&c.only, "only", "", "run only the configuration of this name (sqlite-normal, sqlite-full, postgres)")
	return fs
}

// config is one configuration both sides run in: the same durability.
type config struct {
	Name       string   `json:"name"`
	Durability string   `json:"durability"`
	LangGraph  []string `json:"-"` // bench.js flags
	Cairn      []string `json:"-"` // run's flags
}

func configs(c compareOptions, dir string) []config {
	lg, cn := filepath.Join(dir, "langgraph.db"), filepath.Join(dir, "cairn.db")
	return []config{
		{
			Name: "sqlite-normal",
			Durability: "WAL, synchronous=NORMAL: a commit survives a crash of the process, the last ones may be lost " +
				"to a power failure. LangGraph's SqliteSaver as it comes (better-sqlite3 builds SQLite with " +
				"SQLITE_DEFAULT_WAL_SYNCHRONOUS=1); cairn with ?synchronous=normal.",
			LangGraph: []string{"--store", "sqlite", "--path", lg, "--synchronous", "default"},
			Cairn:     []string{"-store", "sqlite", "-path", cn, "-synchronous", "normal"},
		},
		{
			Name: "sqlite-full",
			Durability: "WAL, synchronous=FULL: every commit is fsynced before the call returns. cairn's default; " +
				"LangGraph's SqliteSaver given a better-sqlite3 connection set to synchronous=FULL.",
			LangGraph: []string{"--store", "sqlite", "--path", lg, "--synchronous", "full"},
			Cairn:     []string{"-store", "sqlite", "-path", cn, "-synchronous", "full"},
		},
		{
			Name: "postgres",
			Durability: "PostgreSQL with fsync and synchronous_commit on: each of LangGraph's checkpoint puts and " +
				"putWrites is a transaction, as each of cairn's appends is.",
			LangGraph: []string{"--store", "postgres", "--postgres", c.postgres, "--schema", "bench_langgraph"},
			Cairn:     []string{"-store", "postgres", "-postgres", c.postgres, "-namespace", "bench_longconv"},
		},
	}
}

// Side is one system's runs in one configuration, with the medians.
type Side struct {
	TurnP50     map[string]float64 `json:"turn_p50_ms"`
	ToolTurnP50 map[string]float64 `json:"tool_turn_p50_ms"`
	BytesStored int64              `json:"bytes_stored"`
	LoadMS      float64            `json:"load_ms"`
	ProcessMS   float64            `json:"load_process_ms"`
	RunSeconds  float64            `json:"run_seconds"`
	Runs        []json.RawMessage  `json:"runs"`
}

// Comparison is what compare prints.
type Comparison struct {
	Turns   int       `json:"turns"`
	Rounds  int       `json:"rounds"`
	Started time.Time `json:"started"`
	Method  string    `json:"method"`
	Configs []Pair    `json:"configs"`
}

// Pair is one configuration's two sides.
type Pair struct {
	config
	LangGraph Side `json:"langgraph"`
	Cairn     Side `json:"cairn"`
}

const method = "One thread of 1 KB user turns; a fake model answers 1 KB; every third turn it first calls a tool " +
	"whose result is 1 KB. One LangGraph invoke (a StateGraph over MessagesAnnotation, checkpointed at every " +
	"step) or one cairn Session.Run with Continue per turn. turn_p50_ms[m] is the median latency of turns " +
	"max(1,m-19)..m (tool_turn_p50_ms of the tool turns among them); bytes_stored is the SQLite file after a " +
	"TRUNCATE checkpoint, or the pg_total_relation_size of the tables of the side's schema; load_ms is a fresh " +
	"process's time from opening the store to holding the thread's state, load_process_ms that process's wall " +
	"time from outside (median of the loads of a run). Each figure here is the median over the rounds (of two, " +
	"their mean); the sides alternate which runs first."

func compare(ctx context.Context, c compareOptions) (*Comparison, error) {
	if c.rounds < 1 || c.turns < 1 || c.loads < 1 {
		return nil, fmt.Errorf("-rounds, -turns and -loads must be at least 1")
	}
	script := filepath.Join(c.langgraph, "bench.js")
	if _, err := os.Stat(filepath.Join(c.langgraph, "node_modules")); err != nil {
		return nil, fmt.Errorf("%s: no node_modules: run npm ci there first", c.langgraph)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir := c.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "longconv"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	cmp := &Comparison{Turns: c.turns, Rounds: c.rounds, Started: time.Now().UTC().Truncate(time.Second), Method: method}
	common := []string{strconv.Itoa(c.turns), strconv.Itoa(c.loads)}
	var runs [][2][]json.RawMessage
	cfgs := configs(c, dir)
	if c.only != "" {
		var keep []config
		for _, cf := range cfgs {
			if cf.Name == c.only {
				keep = append(keep, cf)
			}
		}
		if keep == nil {
			return nil, fmt.Errorf("-only %q: no configuration of that name", c.only)
		}
		cfgs = keep
	}
	runs = make([][2][]json.RawMessage, len(cfgs))
	for round := range c.rounds {
		for i, cf := range cfgs {
			lg := exec.CommandContext(ctx, c.node, append([]string{script, "run", "--turns", common[0], "--loads", common[1]}, cf.LangGraph...)...)
			cn := exec.CommandContext(ctx, self, append([]string{"run", "-turns", common[0], "-loads", common[1]}, cf.Cairn...)...)
			order := []struct {
				side int
				cmd  *exec.Cmd
			}{{0, lg}, {1, cn}}
			if round%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, o := range order {
				fmt.Fprintf(os.Stderr, "round %d, %s, %s\n", round+1, cf.Name, [2]string{"langgraph", "cairn"}[o.side])
				out, err := output(o.cmd)
				if err != nil {
					return nil, fmt.Errorf("%s, %s: %w", cf.Name, [2]string{"langgraph", "cairn"}[o.side], err)
				}
				// Each run's JSON goes to stderr too, so that a failure
				// later loses none of the runs before it.
				fmt.Fprintf(os.Stderr, "%s\n", out)
				runs[i][o.side] = append(runs[i][o.side], out)
			}
			for _, f := range []string{"langgraph.db", "cairn.db"} {
				for _, sfx := range []string{"", "-wal", "-shm"} {
					_ = os.Remove(filepath.Join(dir, f+sfx))
				}
			}
		}
	}
	want := conversationSum(c.turns)
	for i, cf := range cfgs {
		p := Pair{config: cf}
		for side, dst := range []*Side{&p.LangGraph, &p.Cairn} {
			s, err := summarize(runs[i][side], want)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", cf.Name, err)
			}
			*dst = s
		}
		cmp.Configs = append(cmp.Configs, p)
	}
	return cmp, nil
}

func output(cmd *exec.Cmd) (json.RawMessage, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, out); err != nil {
		return nil, fmt.Errorf("output is not JSON: %w", err)
	}
	return compact.Bytes(), nil
}

// summarize takes the median of each figure over a side's runs, after
// checking that every run went through the same conversation.
func summarize(runs []json.RawMessage, want string) (Side, error) {
	s := Side{TurnP50: map[string]float64{}, ToolTurnP50: map[string]float64{}, Runs: runs}
	var (
		bytesStored, load, process, secs []float64
		turn, tool                       = map[string][]float64{}, map[string][]float64{}
	)
	for _, raw := range runs {
		var r Result
		if err := json.Unmarshal(raw, &r); err != nil {
			return s, err
		}
		if r.Conversation != want {
			return s, fmt.Errorf("%s ran another conversation (sha256 %s, want %s)", r.System, r.Conversation, want)
		}
		for k, v := range r.TurnP50 {
			turn[k] = append(turn[k], v)
		}
		for k, v := range r.ToolTurnP50 {
			tool[k] = append(tool[k], v)
		}
		bytesStored = append(bytesStored, float64(r.BytesStored))
		load, process = append(load, r.Load.LoadMS), append(process, r.Load.ProcessMS)
		secs = append(secs, r.RunSeconds)
	}
	for k, v := range turn {
		s.TurnP50[k] = round3(median(v))
	}
	for k, v := range tool {
		s.ToolTurnP50[k] = round3(median(v))
	}
	s.BytesStored = int64(median(bytesStored))
	s.LoadMS, s.ProcessMS, s.RunSeconds = round3(median(load)), round3(median(process)), round3(median(secs))
	return s, nil
}
