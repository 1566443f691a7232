package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/store/memory"
)

// The long conversation of the agent measurements: 1 KB user turns, 1 KB
// answers, and every third turn a tool call whose result is 1 KB.
const (
	longTurnBytes = 1024
	longToolEvery = 3
)

// longWords are what longText draws from: word salad, so that a store that
// compresses what it keeps (PostgreSQL, over 2 KB) finds what it would in
// prose, no more (bench/longconv's conversation draws the same way).
var longWords = strings.Fields(`the of and to in a is that for it as was with be by on not he this are
	or his from at which but have an had they you were their one all we can her has there been if more
	when will would who so model agent memory store session event tool answer question turn state
	thread write read long short`)

// longText returns n bytes of text that say which turn they belong to,
// then words drawn by a linear congruential generator seeded with the
// kind and the turn.
func longText(kind string, turn, n int) string {
	var b strings.Builder
	b.Grow(n + 16)
	fmt.Fprintf(&b, "%s %d:", kind, turn)
	x := uint32(turn)*4 + uint32(len(kind))
	for b.Len() < n {
		x = x*1664525 + 1013904223
		b.WriteByte(' ')
		b.WriteString(longWords[int(x>>26)%len(longWords)])
	}
	return b.String()[:n]
}

// longModel answers the long conversation deterministically, with the
// usage a provider would report (about 4 characters a token).
type longModel struct {
	mu      sync.Mutex
	maxSeen int // the largest request, in estimated tokens
}

func (*longModel) ID() string { return "bench:long" }

func (m *longModel) Generate(_ context.Context, req *provider.Request) (*provider.Response, error) {
	in := provider.EstimateTokens(req)
	m.mu.Lock()
	m.maxSeen = max(m.maxSeen, in)
	m.mu.Unlock()
	resp := &provider.Response{Usage: cairn.Usage{InputTokens: int64(in), OutputTokens: longTurnBytes / 4}}
	if req.Purpose == provider.PurposeSummary {
		resp.Text = provider.Digest(req)
		return resp, nil
	}
	if len(req.Messages) == 0 {
		resp.Text = "…"
		return resp, nil
	}
	last := req.Messages[len(req.Messages)-1]
	turn := 0
	if last.Role == cairn.RoleUser {
		fmt.Sscanf(last.Content, "user %d:", &turn)
	}
	if turn > 0 && turn%longToolEvery == 0 {
		resp.ToolCalls = []cairn.ToolCall{{Name: "lookup", Args: json.RawMessage(`{"q":"turn ` + strconv.Itoa(turn) + `"}`)}}
		return resp, nil
	}
	resp.Text = longText("answer", turn, longTurnBytes)
	return resp, nil
}

func longAgent(st cairn.Store, m *longModel) *agent.Agent {
	lookup := agent.NewTool("lookup", "Look something up.", func(_ context.Context, in struct {
		Q string `json:"q"`
	}) (string, error) {
		return longText("result of "+in.Q, 0, longTurnBytes), nil
	})
	return &agent.Agent{Name: "bench", Instructions: "You are a helpful assistant.", Model: m,
		Tools: []*agent.Tool{lookup}, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// measureLong measures the agent on long conversations: a turn's time in
// one process early and late in a conversation, taken in turn; the time to
// open a session of 10, 1,000 and 10,000 turns and run one more turn; and
// the bytes a conversation leaves in the store when one process runs it
// and when an agent is opened anew for every turn.
func measureLong(ctx context.Context, b *backend, cfg settings, res *Result, progress func(string)) error {
	res.AgentTurnUS, res.OpenMS, res.RequestTokensMax = map[string]float64{}, map[string]float64{}, map[string]int{}
	if err := measureTurns(ctx, b, cfg, res, progress); err != nil {
		return err
	}
	for _, n := range cfg.openTurns {
		progress(fmt.Sprintf("open a %d-turn session", n))
		id, err := longSession(ctx, b, n)
		if err != nil {
			return fmt.Errorf("a %d-turn session: %w", n, err)
		}
		var open []time.Duration
		for rep := range cfg.openRep {
			a := longAgent(b.store, &longModel{})
			t0 := time.Now()
			s, err := a.Open(ctx, id)
			if err != nil {
				return err
			}
			if _, err := s.Run(ctx, longText("user", n+rep+1, longTurnBytes), agent.Continue()); err != nil {
				return err
			}
			open = append(open, time.Since(t0))
		}
		res.OpenMS[fmt.Sprint(n)] = round(percentile(open, 50) / 1e3)
	}
	return measureBytes(ctx, b, cfg, res, progress)
}

// turnWindow is how many turns each side of the turn measurement takes.
const turnWindow = 20

// measureTurns times the agent's turns in one process on a young session
// (its turns 1 to 20: "10") and on one of cfg.longTurns turns (its next 20),
// one turn of each in turn, so that a change in the machine's load falls
// on both alike. The long session is made as longSession makes it.
func measureTurns(ctx context.Context, b *backend, cfg settings, res *Result, progress func(string)) error {
	progress(fmt.Sprintf("a turn at turn 10 and at turn %d, in turn", cfg.longTurns))
	oldID, err := longSession(ctx, b, cfg.longTurns)
	if err != nil {
		return fmt.Errorf("a %d-turn session: %w", cfg.longTurns, err)
	}
	youngID, err := b.session(ctx)
	if err != nil {
		return err
	}
	ym, om := &longModel{}, &longModel{}
	young, err := longAgent(b.store, ym).Resume(ctx, youngID)
	if err != nil {
		return err
	}
	old, err := longAgent(b.store, om).Resume(ctx, oldID)
	if err != nil {
		return err
	}
	w := min(turnWindow, cfg.longTurns/2)
	var yt, ot []time.Duration
	for turn := 1; turn <= w; turn++ {
		for _, side := range []struct {
			s     *agent.Session
			turn  int
			times *[]time.Duration
		}{{young, turn, &yt}, {old, cfg.longTurns + turn, &ot}} {
			t0 := time.Now()
			if _, err := side.s.Run(ctx, longText("user", side.turn, longTurnBytes), agent.Continue()); err != nil {
				return fmt.Errorf("turn %d: %w", side.turn, err)
			}
			*side.times = append(*side.times, time.Since(t0))
		}
	}
	res.AgentTurnUS["10"] = percentile(yt, 50)
	res.AgentTurnUS[fmt.Sprint(cfg.longTurns)] = percentile(ot, 50)
	res.RequestTokensMax["10"] = ym.maxSeen
	res.RequestTokensMax[fmt.Sprint(cfg.longTurns)] = om.maxSeen
	return nil
}

// measureBytes runs a conversation of cfg.bytesTurns turns twice on the
// store, with compaction off, in one process and with an agent opened anew
// for every turn (as a server or a worker runs it), and reports the bytes each left in the
// store (what the store grew by, snapshots included: Result.SessionBytes)
// and the time of the reopened agent's Open and turn near the end
// (OpenMS["reopened"]).
func measureBytes(ctx context.Context, b *backend, cfg settings, res *Result, progress func(string)) error {
	if cfg.bytesTurns == 0 {
		return nil
	}
	res.SessionBytes = map[string]int64{}
	for _, reopen := range []bool{false, true} {
		name := map[bool]string{false: "one_process", true: "reopened"}[reopen]
		progress(fmt.Sprintf("a %d-turn conversation, %s", cfg.bytesTurns, strings.ReplaceAll(name, "_", " ")))
		id, err := b.session(ctx)
		if err != nil {
			return err
		}
		// The store's size is its whole namespace's, or the session's
		// (file): what it grew by is the conversation's either way.
		before, sized, err := b.size(ctx, []string{id})
		if err != nil {
			return err
		}
		var s *agent.Session
		var last []time.Duration
		for turn := 1; turn <= cfg.bytesTurns; turn++ {
			t0 := time.Now()
			if s == nil || reopen {
				a := longAgent(b.store, &longModel{})
				// Without compaction the state grows with the history, as
				// LangGraph's messages reducer keeps every message: the case
				// where snapshots written too often cost the square of it.
				a.Compaction = agent.CompactOff
				if s, err = a.Open(ctx, id); err != nil {
					return err
				}
			}
			if _, err := s.Run(ctx, longText("user", turn, longTurnBytes), agent.Continue()); err != nil {
				return fmt.Errorf("turn %d: %w", turn, err)
			}
			if turn > cfg.bytesTurns-turnWindow {
				last = append(last, time.Since(t0))
			}
		}
		if sized {
			after, _, err := b.size(ctx, []string{id})
			if err != nil {
				return err
			}
			res.SessionBytes[name] = after - before
		}
		if reopen {
			res.OpenMS["reopened"] = round(percentile(last, 50) / 1e3)
		}
	}
	return nil
}

// longSession makes a session of n turns in b's store: the agent runs
// them on a memory store, whose events and snapshot are then copied over,
// as the agent would have written them.
func longSession(ctx context.Context, b *backend, n int) (string, error) {
	mem, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		return "", err
	}
	defer mem.Close()
	a := longAgent(mem, &longModel{})
	s, err := a.Start(ctx)
	if err != nil {
		return "", err
	}
	for turn := 1; turn <= n; turn++ {
		if _, err := s.Run(ctx, longText("user", turn, longTurnBytes), agent.Continue()); err != nil {
			return "", fmt.Errorf("turn %d: %w", turn, err)
		}
	}
	rec, err := mem.Load(ctx, s.ID(), 0)
	if err != nil {
		return "", err
	}
	id, err := b.session(ctx)
	if err != nil {
		return "", err
	}
	for i := 0; i < len(rec.Events); i += 500 {
		batch := rec.Events[i:min(i+500, len(rec.Events))]
		if err := b.store.Append(ctx, id, int64(i), batch...); err != nil {
			return "", fmt.Errorf("copy at seq %d: %w", i, err)
		}
	}
	var from cairn.Store = mem
	src, ok1 := from.(cairn.Snapshotter)
	dst, ok2 := b.store.(cairn.Snapshotter)
	if ok1 && ok2 {
		snap, err := src.LoadSnapshot(ctx, s.ID())
		if err != nil {
			return "", err
		}
		if snap != nil {
			if err := dst.PutSnapshot(ctx, id, *snap); err != nil {
				return "", fmt.Errorf("copy the snapshot: %w", err)
			}
		}
	}
	return id, nil
}
