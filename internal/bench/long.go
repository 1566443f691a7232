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

// longText returns n bytes of text that say which turn they belong to.
func longText(kind string, turn, n int) string {
	head := fmt.Sprintf("%s %d: ", kind, turn)
	return head + strings.Repeat("lorem ipsum dolor sit amet ", n/27+1)[:max(0, n-len(head))]
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
// one process early and late in a conversation, and the time to open a
// session of 10, 1,000 and 10,000 turns and run one more turn.
func measureLong(ctx context.Context, b *backend, cfg settings, res *Result, progress func(string)) error {
	res.AgentTurnUS, res.OpenMS, res.RequestTokensMax = map[string]float64{}, map[string]float64{}, map[string]int{}
	progress(fmt.Sprintf("a turn at turn 10 and %d", cfg.longTurns))
	m := &longModel{}
	a := longAgent(b.store, m)
	id, err := b.session(ctx)
	if err != nil {
		return err
	}
	s, err := a.Resume(ctx, id)
	if err != nil {
		return err
	}
	last := cfg.longTurns + 10
	var times []time.Duration
	for turn := 1; turn <= last; turn++ {
		t0 := time.Now()
		if _, err := s.Run(ctx, longText("user", turn, longTurnBytes), agent.Continue()); err != nil {
			return fmt.Errorf("turn %d: %w", turn, err)
		}
		times = append(times, time.Since(t0))
		switch turn {
		case min(20, cfg.longTurns/2):
			res.RequestTokensMax["10"] = m.maxSeen
		case last:
			res.RequestTokensMax[fmt.Sprint(cfg.longTurns)] = m.maxSeen
		}
	}
	w := min(20, cfg.longTurns/2)
	res.AgentTurnUS["10"] = percentile(times[:w], 50)
	res.AgentTurnUS[fmt.Sprint(cfg.longTurns)] = percentile(times[last-w:], 50)

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
