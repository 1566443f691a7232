// Command memorymcp compares cairn's long-term memory with the reference
// MCP memory server (npm @modelcontextprotocol/server-memory, a knowledge
// graph in one JSONL file), both driven the same way: as MCP servers on
// stdio, through the Go SDK's client.
//
// The workload: save N observations (cairn: memory_save of a text under a
// key; the reference: create_entities of one entity with one observation),
// then search for S of them by a word only that observation holds
// (memory_search; search_nodes), checking that each search finds it. Then
// the same saves from C clients at once, each a server process of its own
// on the same store (cairn: one SQLite file; the reference: one JSONL
// file), and the memories lost: saved (the call answered without error)
// but not there afterwards.
//
//	go run ./memorymcp -n 1000 -reference $CAIRN_TEST_MCP_SERVERS/node_modules/.bin/mcp-server-memory
//
// It prints a table, or JSON with -json. docs/PERFORMANCE.md has figures.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// server is one of the two servers under test.
type server struct {
	name string
	// command returns the command of a server process on store.
	command func(store string) *exec.Cmd
	// save and search are the tool calls of the workload.
	save   func(i int) *sdk.CallToolParams
	search func(i int) *sdk.CallToolParams
	// found reports whether a search result holds item i.
	found func(res *sdk.CallToolResult, i int) bool
	// count counts the items in the store.
	count func(ctx context.Context, cs *sdk.ClientSession) (int, error)
}

func key(i int) string  { return fmt.Sprintf("obs-%d", i) }
func word(i int) string { return fmt.Sprintf("tok%dz", i) }
func text(i int) string {
	return fmt.Sprintf("observation %d: the user mentioned %s while talking about project plans and lunch", i, word(i))
}

func cairnServer(bin string) server {
	return server{
		name: "cairn mcp (SQLite)",
		command: func(store string) *exec.Cmd {
			return exec.Command(bin, "--store", "sqlite://"+filepath.Join(store, "cairn.db"), "mcp")
		},
		save: func(i int) *sdk.CallToolParams {
			return &sdk.CallToolParams{Name: "memory_save", Arguments: map[string]any{"namespace": "bench", "key": key(i), "text": text(i)}}
		},
		search: func(i int) *sdk.CallToolParams {
			return &sdk.CallToolParams{Name: "memory_search", Arguments: map[string]any{"namespace": "bench", "query": word(i), "limit": 10}}
		},
		found: func(res *sdk.CallToolResult, i int) bool {
			b, _ := json.Marshal(res.StructuredContent)
			return strings.Contains(string(b), `"key":"`+key(i)+`"`)
		},
		count: func(ctx context.Context, cs *sdk.ClientSession) (int, error) {
			n, cursor := 0, ""
			for {
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "memory_list", Arguments: map[string]any{"namespace": "bench", "limit": 1000, "cursor": cursor}})
				if err != nil {
					return 0, err
				}
				var page struct {
					Items      []json.RawMessage `json:"items"`
					NextCursor string            `json:"next_cursor"`
				}
				b, _ := json.Marshal(res.StructuredContent)
				if err := json.Unmarshal(b, &page); err != nil {
					return 0, err
				}
				n += len(page.Items)
				if page.NextCursor == "" {
					return n, nil
				}
				cursor = page.NextCursor
			}
		},
	}
}

func referenceServer(bin string) server {
	return server{
		name: "@modelcontextprotocol/server-memory",
		command: func(store string) *exec.Cmd {
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), "MEMORY_FILE_PATH="+filepath.Join(store, "memory.jsonl"))
			return cmd
		},
		save: func(i int) *sdk.CallToolParams {
			return &sdk.CallToolParams{Name: "create_entities", Arguments: map[string]any{"entities": []any{
				map[string]any{"name": key(i), "entityType": "observation", "observations": []string{text(i)}},
			}}}
		},
		search: func(i int) *sdk.CallToolParams {
			return &sdk.CallToolParams{Name: "search_nodes", Arguments: map[string]any{"query": word(i)}}
		},
		found: func(res *sdk.CallToolResult, i int) bool {
			b, _ := json.Marshal(res)
			return strings.Contains(string(b), key(i))
		},
		count: func(ctx context.Context, cs *sdk.ClientSession) (int, error) {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_graph", Arguments: map[string]any{}})
			if err != nil {
				return 0, err
			}
			var g struct {
				Entities []json.RawMessage `json:"entities"`
			}
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &g); err != nil || (len(g.Entities) == 0 && len(res.Content) > 0) {
				if tc, ok := res.Content[0].(*sdk.TextContent); ok {
					err = json.Unmarshal([]byte(tc.Text), &g)
				}
				if err != nil {
					return 0, err
				}
			}
			return len(g.Entities), nil
		},
	}
}

// Result is the figures of one server.
type Result struct {
	Server         string  `json:"server"`
	N              int     `json:"n"`
	SaveP50MS      float64 `json:"save_p50_ms"`
	SaveP95MS      float64 `json:"save_p95_ms"`
	SavesPerSec    float64 `json:"saves_per_sec"`
	SearchP50MS    float64 `json:"search_p50_ms"`
	SearchP95MS    float64 `json:"search_p95_ms"`
	SearchesFound  int     `json:"searches_found"`
	Searches       int     `json:"searches"`
	StoreBytes     int64   `json:"store_bytes"`
	Clients        int     `json:"clients"`
	ConcurrentSave int     `json:"concurrent_saved"` // saves answered without error
	ConcurrentLost int     `json:"concurrent_lost"`  // of those, not in the store afterwards
	ConcurrentSecs float64 `json:"concurrent_secs"`
}

func connect(ctx context.Context, cmd *exec.Cmd) (*sdk.ClientSession, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: "cairn-memory-bench", Version: "1"}, nil)
	return client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
}

func call(ctx context.Context, cs *sdk.ClientSession, p *sdk.CallToolParams) (*sdk.CallToolResult, error) {
	res, err := cs.CallTool(ctx, p)
	if err == nil && res.IsError {
		b, _ := json.Marshal(res.Content)
		err = fmt.Errorf("%s: error result %s", p.Name, b)
	}
	return res, err
}

func pct(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[int(float64(len(s)-1)*p)].Microseconds()) / 1000
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

func measure(ctx context.Context, s server, n, searches, clients int) (Result, error) {
	r := Result{Server: s.name, N: n, Searches: searches, Clients: clients}
	dir, err := os.MkdirTemp("", "memorymcp-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	cs, err := connect(ctx, s.command(dir))
	if err != nil {
		return r, fmt.Errorf("%s: %w", s.name, err)
	}
	saves := make([]time.Duration, 0, n)
	begin := time.Now()
	for i := range n {
		t := time.Now()
		if _, err := call(ctx, cs, s.save(i)); err != nil {
			return r, fmt.Errorf("%s: save %d: %w", s.name, i, err)
		}
		saves = append(saves, time.Since(t))
	}
	r.SavesPerSec = float64(n) / time.Since(begin).Seconds()
	r.SaveP50MS, r.SaveP95MS = pct(saves, 0.5), pct(saves, 0.95)
	var finds []time.Duration
	for j := range searches {
		i := (j * 7919) % n
		t := time.Now()
		res, err := call(ctx, cs, s.search(i))
		if err != nil {
			return r, fmt.Errorf("%s: search %d: %w", s.name, i, err)
		}
		finds = append(finds, time.Since(t))
		if s.found(res, i) {
			r.SearchesFound++
		}
	}
	r.SearchP50MS, r.SearchP95MS = pct(finds, 0.5), pct(finds, 0.95)
	cs.Close()
	r.StoreBytes = dirSize(dir)

	// The same saves from several clients at once, each a server process
	// on one fresh store.
	cdir := filepath.Join(dir, "concurrent")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		return r, err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		saved int
		errs  []error
	)
	begin = time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, err := connect(ctx, s.command(cdir))
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			defer cs.Close()
			for i := c; i < n; i += clients {
				_, err := call(ctx, cs, s.save(i))
				mu.Lock()
				if err == nil {
					saved++
				} else if len(errs) < 3 {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r.ConcurrentSecs = time.Since(begin).Seconds()
	for _, err := range errs {
		log.Printf("%s: concurrent: %v", s.name, err)
	}
	r.ConcurrentSave = saved
	cs, err = connect(ctx, s.command(cdir))
	if err != nil {
		return r, err
	}
	defer cs.Close()
	got, err := s.count(ctx, cs)
	if err != nil {
		return r, fmt.Errorf("%s: count: %w", s.name, err)
	}
	r.ConcurrentLost = max(saved-got, 0)
	return r, nil
}

func main() {
	n := flag.Int("n", 1000, "observations to save")
	searches := flag.Int("searches", 200, "searches after the saves")
	clients := flag.Int("clients", 8, "concurrent clients of the second part")
	cairnBin := flag.String("cairn", "", "the cairn binary (default: built from ../cmd/cairn)")
	ref := flag.String("reference", "", "the reference server's binary, mcp-server-memory (default: $CAIRN_TEST_MCP_SERVERS/node_modules/.bin/mcp-server-memory)")
	asJSON := flag.Bool("json", false, "print JSON")
	flag.Parse()
	ctx := context.Background()
	if *ref == "" {
		if d := os.Getenv("CAIRN_TEST_MCP_SERVERS"); d != "" {
			*ref = filepath.Join(d, "node_modules", ".bin", "mcp-server-memory")
		}
	}
	if *ref == "" {
		log.Fatal("give -reference PATH to mcp-server-memory, or set CAIRN_TEST_MCP_SERVERS")
	}
	if *cairnBin == "" {
		dir, err := os.MkdirTemp("", "memorymcp-bin-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		*cairnBin = filepath.Join(dir, "cairn")
		if out, err := exec.Command("go", "build", "-o", *cairnBin, "github.com/cairnhq/cairn/cmd/cairn").CombinedOutput(); err != nil {
			log.Fatalf("build cairn: %v\n%s", err, out)
		}
	}
	var results []Result
	for _, s := range []server{cairnServer(*cairnBin), referenceServer(*ref)} {
		r, err := measure(ctx, s, *n, min(*searches, *n), *clients)
		if err != nil {
			log.Fatal(err)
		}
		results = append(results, r)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(results)
		return
	}
	fmt.Printf("N=%d, %d searches, %d concurrent clients\n", *n, min(*searches, *n), *clients)
	fmt.Printf("%-38s %10s %10s %10s %10s %10s %8s %12s %10s\n", "server", "save p50", "save p95", "saves/s", "search p50", "search p95", "found", "store", "lost/8")
	for _, r := range results {
		fmt.Printf("%-38s %8.2fms %8.2fms %10.0f %8.2fms %8.2fms %4d/%-3d %10dKB %4d/%d\n", r.Server, r.SaveP50MS, r.SaveP95MS, r.SavesPerSec,
			r.SearchP50MS, r.SearchP95MS, r.SearchesFound, r.Searches, r.StoreBytes/1024, r.ConcurrentLost, r.ConcurrentSave)
	}
}
