package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/longterm"
)

// MemoryLabel is the session label that names the long-term memory
// namespace its agent is given: `cairn run --memory-ns` records it on the
// sessions it starts, and `cairn worker` and `cairn sessions resume`
// give that namespace's tools to the session's agent by themselves.
const MemoryLabel = "cairn.memory"

// MemoryTools returns the long-term memory tools of an agent that keeps
// its memories in namespace of mem: memory_save and memory_search. Unlike
// remember, which sets a variable of the session, they reach every
// session that is given the same namespace (a user's, say).
func MemoryTools(mem longterm.Store, namespace string) []*agent.Tool {
	return []*agent.Tool{MemorySave(mem, namespace), MemorySearch(mem, namespace)}
}

// MemorySaveInput is the arguments of memory_save.
type MemorySaveInput struct {
	Key  string `json:"key" jsonschema:"description=a short name for the memory: 1-256 characters of A-Z a-z 0-9 _ - . : @ + =; saving under a key again replaces it"`
	Text string `json:"text" jsonschema:"description=the memory in plain words, as it should be found again"`
}

// MemorySave returns the memory_save tool: it saves a text under a key in
// namespace of mem, with the call's session and the seq of the model
// response that asked for it as the item's Source (agent.CallSource). It
// is idempotent: saving the same text under the same key twice leaves
// the store as once.
func MemorySave(mem longterm.Store, namespace string) *agent.Tool {
	return agent.NewTool("memory_save", "Save a fact to long-term memory, to find it again in later sessions.", func(ctx context.Context, in MemorySaveInput) (string, error) {
		if strings.TrimSpace(in.Text) == "" {
			return "", errors.New(`bad argument "text": is empty`)
		}
		if err := longterm.ValidateKey(in.Key); err != nil {
			return "", fmt.Errorf(`bad argument "key": %w`, err)
		}
		session, seq := agent.CallSource(ctx)
		value, _ := json.Marshal(in.Text)
		it, err := mem.Put(ctx, longterm.Item{Namespace: namespace, Key: in.Key, Value: value, Text: in.Text,
			Source: longterm.Source{Session: session, Seq: seq}}, longterm.PutOptions{})
		if err != nil {
			return "", fmt.Errorf("memory_save: %w", err)
		}
		return fmt.Sprintf("saved %s (version %d)", it.Key, it.Version), nil
	})
}

// MemorySearchInput is the arguments of memory_search.
type MemorySearchInput struct {
	Query string `json:"query" jsonschema:"description=words to look for"`
	Limit int    `json:"limit,omitempty" jsonschema:"description=the most memories to return; 5 by default"`
}

// MemorySearch returns the memory_search tool: it searches namespace of
// mem by words and returns the best memories, a line each.
func MemorySearch(mem longterm.Store, namespace string) *agent.Tool {
	return agent.NewTool("memory_search", "Search long-term memory for facts saved in this or earlier sessions.", func(ctx context.Context, in MemorySearchInput) (string, error) {
		if strings.TrimSpace(in.Query) == "" {
			return "", errors.New(`bad argument "query": is empty`)
		}
		if in.Limit < 0 || in.Limit > 50 {
			return "", fmt.Errorf(`bad argument "limit": %d is not between 1 and 50`, in.Limit)
		}
		if in.Limit == 0 {
			in.Limit = 5
		}
		res, err := mem.Search(ctx, longterm.SearchOptions{Query: in.Query, Prefix: namespace, Limit: in.Limit, Mode: longterm.ModeText})
		if err != nil {
			return "", fmt.Errorf("memory_search: %w", err)
		}
		if len(res) == 0 {
			return "no memory matches " + in.Query, nil
		}
		return memoryLines(res), nil
	})
}

func memoryLines(res []longterm.Result) string {
	var b strings.Builder
	for i, r := range res {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "- %s: %s", r.Item.Key, itemText(r.Item))
	}
	return b.String()
}

func itemText(it longterm.Item) string {
	if it.Text != "" {
		return it.Text
	}
	return string(it.Value)
}

// RecallMemoriesHeader begins the text of RecallMemories.
const RecallMemoriesHeader = "Long-term memories that may be relevant:"

// RecallMemories returns the text to give a run's model (agent.Background) so
// that it starts knowing the memories of namespace most relevant to
// input: at most limit, best first, after RecallMemoriesHeader; "" when none
// matches.
func RecallMemories(ctx context.Context, mem longterm.Store, namespace, input string, limit int) (string, error) {
	if limit <= 0 {
		return "", nil
	}
	res, err := mem.Search(ctx, longterm.SearchOptions{Query: input, Prefix: namespace, Limit: limit, Mode: longterm.ModeText})
	if err != nil {
		return "", fmt.Errorf("recall memories of %s: %w", namespace, err)
	}
	if len(res) == 0 {
		return "", nil
	}
	return RecallMemoriesHeader + "\n" + memoryLines(res), nil
}
