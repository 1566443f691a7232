// Package mcpserver serves cairn over MCP (Model Context Protocol), with
// the official Go SDK: long-term memory (save, search, get, list, delete)
// and saved sessions (list, show) as tools that any MCP client can call —
// Claude Code, Cursor, an agent in another language. `cairn mcp` runs it
// on stdio or streamable HTTP.
//
//	srv := mcpserver.New(mcpserver.Config{Memory: mem, Sessions: st})
//	err := srv.Run(ctx, &sdk.StdioTransport{})
//
// Every tool carries annotations that say what it does to the store:
// memory_search, memory_get, memory_list, sessions_list and sessions_show
// are read-only; memory_save replaces an item that exists (destructive,
// idempotent: saving the same item twice leaves the store as once);
// memory_delete erases (destructive, idempotent). None reaches beyond the
// store (openWorldHint false). A tool given an argument that breaks the
// rules answers with an error result naming the argument.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/longterm"
)

// Config says what a server serves.
type Config struct {
	// Memory is the long-term store of the memory tools; nil: no memory
	// tools.
	Memory longterm.Store
	// Sessions is the session store of the session tools; nil: no session
	// tools.
	Sessions cairn.Store
	// ReadOnly leaves out the tools that change the store (memory_save,
	// memory_delete).
	ReadOnly bool
	// Transcript, when set, turns a session's events into the lines
	// sessions_show returns; nil: each event's kind and data.
	Transcript func(events []cairn.Event) ([]TranscriptLine, error)
	// Version is the server's version in the initialize answer.
	Version string
}

// TranscriptLine is one line of a session as sessions_show returns it.
type TranscriptLine struct {
	Seq  int64     `json:"seq"`
	At   time.Time `json:"at"`
	Who  string    `json:"who" jsonschema:"run, system, user, assistant, tool, state, approval, memory, step or custom"`
	Text string    `json:"text"`
}

// Tool names.
const (
	ToolMemorySave   = "memory_save"
	ToolMemorySearch = "memory_search"
	ToolMemoryGet    = "memory_get"
	ToolMemoryList   = "memory_list"
	ToolMemoryDelete = "memory_delete"
	ToolSessionsList = "sessions_list"
	ToolSessionsShow = "sessions_show"
)

func ptr[T any](v T) *T { return &v }

var (
	readOnly    = &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	replaces    = &sdk.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)}
	destructive = &sdk.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)}
)

// New returns an MCP server with the tools of cfg. Run it on a transport
// (sdk.StdioTransport), or serve it over HTTP with
// sdk.NewStreamableHTTPHandler.
func New(cfg Config) *sdk.Server {
	v := cfg.Version
	if v == "" {
		v = "dev"
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "cairn", Title: "cairn: durable memory for AI agents", Version: v}, &sdk.ServerOptions{
		Instructions: "cairn keeps long-term memory (items of JSON under a namespace such as users/ada and a key, with a text that memory_search matches) and the saved sessions of agents.",
	})
	if cfg.Memory != nil {
		m := memoryTools{cfg.Memory}
		if !cfg.ReadOnly {
			sdk.AddTool(s, &sdk.Tool{Name: ToolMemorySave, Title: "Save a memory", Annotations: replaces,
				Description: "Save a long-term memory: create the item under namespace and key, or replace the one there. text is what memory_search matches (without it, the value's keys and scalars)."}, m.save)
		}
		sdk.AddTool(s, &sdk.Tool{Name: ToolMemorySearch, Title: "Search memories", Annotations: readOnly,
			Description: "Search long-term memory by words, best first (BM25). namespace keeps the items of that namespace and those under it (users/ada holds users/ada/notes)."}, m.search)
		sdk.AddTool(s, &sdk.Tool{Name: ToolMemoryGet, Title: "Get a memory", Annotations: readOnly,
			Description: "Get the long-term memory item under namespace and key."}, m.get)
		sdk.AddTool(s, &sdk.Tool{Name: ToolMemoryList, Title: "List memories", Annotations: readOnly,
			Description: "List long-term memory items under a namespace (all without one), a page at a time; with namespaces_only, the namespaces that hold items."}, m.list)
		if !cfg.ReadOnly {
			sdk.AddTool(s, &sdk.Tool{Name: ToolMemoryDelete, Title: "Delete memories", Annotations: destructive,
				Description: "Erase the long-term memory item under namespace and key, or, without key, every item of the namespace and of the namespaces under it."}, m.delete)
		}
	}
	if cfg.Sessions != nil {
		st := sessionTools{cfg.Sessions, cfg.Transcript}
		sdk.AddTool(s, &sdk.Tool{Name: ToolSessionsList, Title: "List sessions", Annotations: readOnly,
			Description: "List saved agent sessions, most recently updated first, a page at a time."}, st.list)
		sdk.AddTool(s, &sdk.Tool{Name: ToolSessionsShow, Title: "Show a session", Annotations: readOnly,
			Description: "Show a saved session: its info and its transcript, from seq from_seq on."}, st.show)
	}
	return s
}

// MemoryItem is an item as the memory tools return it.
type MemoryItem struct {
	Namespace string            `json:"namespace"`
	Key       string            `json:"key"`
	Value     any               `json:"value"`
	Text      string            `json:"text,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	Version   int64             `json:"version"`
	CreatedAt time.Time         `json:"created_at"`
	UpdatedAt time.Time         `json:"updated_at"`
	ExpiresAt *time.Time        `json:"expires_at,omitempty"`
	Session   string            `json:"source_session,omitempty" jsonschema:"the session the item came from, when an agent saved it"`
	Seq       int64             `json:"source_seq,omitempty" jsonschema:"the seq of the event of source_session that led to it"`
}

func toItem(it longterm.Item) MemoryItem {
	var v any
	_ = json.Unmarshal(it.Value, &v)
	out := MemoryItem{Namespace: it.Namespace, Key: it.Key, Value: v, Text: it.Text, Labels: it.Labels, Version: it.Version,
		CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, Session: it.Source.Session, Seq: it.Source.Seq}
	if !it.ExpiresAt.IsZero() {
		out.ExpiresAt = &it.ExpiresAt
	}
	return out
}

type memoryTools struct{ mem longterm.Store }

// SaveInput are memory_save's arguments.
type SaveInput struct {
	Namespace  string            `json:"namespace" jsonschema:"a slash path of segments of A-Z a-z 0-9 _ -, such as users/ada"`
	Key        string            `json:"key" jsonschema:"the item's name in its namespace: 1-256 characters of A-Z a-z 0-9 _ - . : @ + ="`
	Value      any               `json:"value,omitempty" jsonschema:"any JSON value; without one, the text as a JSON string"`
	Text       string            `json:"text,omitempty" jsonschema:"what memory_search matches; without it, the value's keys and scalars"`
	Labels     map[string]string `json:"labels,omitempty" jsonschema:"names and values that search and list filter on"`
	TTLSeconds int64             `json:"ttl_seconds,omitempty" jsonschema:"expire the item this many seconds after the save; 0: never"`
}

// SaveOutput is memory_save's result.
type SaveOutput struct {
	Item MemoryItem `json:"item"`
}

func (m memoryTools) save(ctx context.Context, _ *sdk.CallToolRequest, in SaveInput) (*sdk.CallToolResult, SaveOutput, error) {
	if in.TTLSeconds < 0 {
		return nil, SaveOutput{}, errors.New("invalid ttl_seconds: it is negative")
	}
	var raw json.RawMessage
	switch {
	case in.Value != nil:
		b, err := json.Marshal(in.Value)
		if err != nil {
			return nil, SaveOutput{}, fmt.Errorf("invalid value: %w", err)
		}
		raw = b
	case in.Text != "":
		raw, _ = json.Marshal(in.Text)
	default:
		return nil, SaveOutput{}, errors.New("invalid value: give a value or a text to save")
	}
	it, err := m.mem.Put(ctx, longterm.Item{Namespace: in.Namespace, Key: in.Key, Value: raw, Text: in.Text, Labels: in.Labels},
		longterm.PutOptions{TTL: time.Duration(in.TTLSeconds) * time.Second})
	if err != nil {
		return nil, SaveOutput{}, err
	}
	return nil, SaveOutput{Item: toItem(*it)}, nil
}

// SearchInput are memory_search's arguments.
type SearchInput struct {
	Query     string            `json:"query" jsonschema:"words to look for; nothing in it is syntax"`
	Namespace string            `json:"namespace,omitempty" jsonschema:"only the items of this namespace and those under it"`
	Labels    map[string]string `json:"labels,omitempty" jsonschema:"only the items with all of these labels"`
	Limit     int               `json:"limit,omitempty" jsonschema:"the most results, 1-1000; 10 by default"`
}

// SearchResult is one item memory_search found.
type SearchResult struct {
	Item  MemoryItem `json:"item"`
	Score float64    `json:"score" jsonschema:"in [0, 1], higher better"`
}

// SearchOutput is memory_search's result.
type SearchOutput struct {
	Results []SearchResult `json:"results"`
}

func (m memoryTools) search(ctx context.Context, _ *sdk.CallToolRequest, in SearchInput) (*sdk.CallToolResult, SearchOutput, error) {
	if strings.TrimSpace(in.Query) == "" {
		return nil, SearchOutput{}, errors.New("invalid query: it is empty; give words to look for")
	}
	if in.Limit < 0 || in.Limit > longterm.MaxSearchLimit {
		return nil, SearchOutput{}, fmt.Errorf("invalid limit: %d is not between 1 and %d", in.Limit, longterm.MaxSearchLimit)
	}
	res, err := m.mem.Search(ctx, longterm.SearchOptions{Query: in.Query, Prefix: in.Namespace, Labels: in.Labels, Limit: in.Limit, Mode: longterm.ModeText})
	if err != nil {
		return nil, SearchOutput{}, err
	}
	out := SearchOutput{Results: make([]SearchResult, 0, len(res))}
	for _, r := range res {
		out.Results = append(out.Results, SearchResult{Item: toItem(r.Item), Score: r.Score})
	}
	return nil, out, nil
}

// GetInput are memory_get's arguments.
type GetInput struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
}

// GetOutput is memory_get's result.
type GetOutput struct {
	Item MemoryItem `json:"item"`
}

func (m memoryTools) get(ctx context.Context, _ *sdk.CallToolRequest, in GetInput) (*sdk.CallToolResult, GetOutput, error) {
	it, err := m.mem.Get(ctx, in.Namespace, in.Key)
	if err != nil {
		if errors.Is(err, longterm.ErrNotFound) {
			return nil, GetOutput{}, fmt.Errorf("no memory under namespace %q and key %q", in.Namespace, in.Key)
		}
		return nil, GetOutput{}, err
	}
	return nil, GetOutput{Item: toItem(*it)}, nil
}

// ListInput are memory_list's arguments.
type ListInput struct {
	Namespace      string `json:"namespace,omitempty" jsonschema:"only this namespace and those under it"`
	NamespacesOnly bool   `json:"namespaces_only,omitempty" jsonschema:"list the namespaces that hold items, not the items"`
	Limit          int    `json:"limit,omitempty" jsonschema:"page size, 1-1000; 100 by default"`
	Cursor         string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page"`
}

// ListOutput is memory_list's result.
type ListOutput struct {
	Items      []MemoryItem `json:"items,omitempty"`
	Namespaces []string     `json:"namespaces,omitempty"`
	NextCursor string       `json:"next_cursor,omitempty" jsonschema:"give it as cursor for the next page; empty on the last"`
}

func (m memoryTools) list(ctx context.Context, _ *sdk.CallToolRequest, in ListInput) (*sdk.CallToolResult, ListOutput, error) {
	if in.NamespacesOnly {
		page, err := m.mem.Namespaces(ctx, longterm.NamespaceOptions{Prefix: in.Namespace, Limit: in.Limit, Cursor: in.Cursor})
		if err != nil {
			return nil, ListOutput{}, err
		}
		return nil, ListOutput{Namespaces: page.Namespaces, NextCursor: page.Next}, nil
	}
	page, err := m.mem.List(ctx, longterm.ListOptions{Prefix: in.Namespace, Limit: in.Limit, Cursor: in.Cursor})
	if err != nil {
		return nil, ListOutput{}, err
	}
	out := ListOutput{NextCursor: page.Next}
	for _, it := range page.Items {
		out.Items = append(out.Items, toItem(it))
	}
	return nil, out, nil
}

// DeleteInput are memory_delete's arguments.
type DeleteInput struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key,omitempty" jsonschema:"the item to erase; without it, every item of the namespace and of those under it"`
}

// DeleteOutput is memory_delete's result.
type DeleteOutput struct {
	Deleted int `json:"deleted" jsonschema:"how many items were erased"`
}

func (m memoryTools) delete(ctx context.Context, _ *sdk.CallToolRequest, in DeleteInput) (*sdk.CallToolResult, DeleteOutput, error) {
	if in.Key == "" {
		if err := longterm.ValidateNamespace(in.Namespace); err != nil {
			return nil, DeleteOutput{}, err
		}
		n, err := m.mem.DeleteNamespace(ctx, in.Namespace)
		return nil, DeleteOutput{Deleted: n}, err
	}
	err := m.mem.Delete(ctx, in.Namespace, in.Key, 0)
	if errors.Is(err, longterm.ErrNotFound) {
		return nil, DeleteOutput{}, nil // already gone: deleting is idempotent
	}
	if err != nil {
		return nil, DeleteOutput{}, err
	}
	return nil, DeleteOutput{Deleted: 1}, nil
}

type sessionTools struct {
	store      cairn.Store
	transcript func([]cairn.Event) ([]TranscriptLine, error)
}

// SessionsListInput are sessions_list's arguments.
type SessionsListInput struct {
	Status []string          `json:"status,omitempty" jsonschema:"only sessions with one of these statuses (new, running, interrupted, awaiting_approval, completed, failed, max_steps, damaged)"`
	Labels map[string]string `json:"labels,omitempty" jsonschema:"only sessions with all of these labels"`
	Limit  int               `json:"limit,omitempty" jsonschema:"page size; 50 by default"`
	Cursor string            `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page"`
}

// SessionsListOutput is sessions_list's result.
type SessionsListOutput struct {
	Sessions   []cairn.SessionInfo `json:"sessions"`
	NextCursor string              `json:"next_cursor,omitempty"`
}

func (s sessionTools) list(ctx context.Context, _ *sdk.CallToolRequest, in SessionsListInput) (*sdk.CallToolResult, SessionsListOutput, error) {
	opts := cairn.ListOptions{Labels: in.Labels, Limit: in.Limit, Cursor: in.Cursor}
	if opts.Limit == 0 {
		opts.Limit = 50
	}
	for _, st := range in.Status {
		opts.Status = append(opts.Status, cairn.Status(st))
	}
	page, err := s.store.List(ctx, opts)
	if err != nil {
		return nil, SessionsListOutput{}, fmt.Errorf("list sessions: %w", err)
	}
	out := SessionsListOutput{Sessions: page.Sessions, NextCursor: page.Next}
	if out.Sessions == nil {
		out.Sessions = []cairn.SessionInfo{}
	}
	for i := range out.Sessions {
		if out.Sessions[i].Labels == nil {
			out.Sessions[i].Labels = map[string]string{}
		}
	}
	return nil, out, nil
}

// SessionsShowInput are sessions_show's arguments.
type SessionsShowInput struct {
	ID      string `json:"id" jsonschema:"the session's whole ID"`
	FromSeq int64  `json:"from_seq,omitempty" jsonschema:"show the events from this seq on; 0: all"`
}

// SessionsShowOutput is sessions_show's result.
type SessionsShowOutput struct {
	Session    cairn.SessionInfo `json:"session"`
	Transcript []TranscriptLine  `json:"transcript"`
}

func (s sessionTools) show(ctx context.Context, _ *sdk.CallToolRequest, in SessionsShowInput) (*sdk.CallToolResult, SessionsShowOutput, error) {
	if err := cairn.ValidateID(in.ID); err != nil {
		return nil, SessionsShowOutput{}, fmt.Errorf("invalid id: %w", err)
	}
	rec, err := s.store.Load(ctx, in.ID, in.FromSeq)
	if err != nil {
		if errors.Is(err, cairn.ErrNotFound) {
			return nil, SessionsShowOutput{}, fmt.Errorf("session %q not found; sessions_list lists them", in.ID)
		}
		return nil, SessionsShowOutput{}, fmt.Errorf("show session %s: %w", in.ID, err)
	}
	out := SessionsShowOutput{Session: rec.Info, Transcript: []TranscriptLine{}}
	if out.Session.Labels == nil {
		out.Session.Labels = map[string]string{}
	}
	if s.transcript != nil {
		lines, err := s.transcript(rec.Events)
		if err != nil {
			return nil, SessionsShowOutput{}, fmt.Errorf("show session %s: %w", in.ID, err)
		}
		out.Transcript = append(out.Transcript, lines...)
		return nil, out, nil
	}
	for _, e := range rec.Events {
		out.Transcript = append(out.Transcript, TranscriptLine{Seq: e.Seq, At: e.At, Who: string(e.Kind), Text: string(e.Data)})
	}
	return nil, out, nil
}
