package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cairnhq/cairn/longterm"
)

// The long-term memory API: items of Config.Memory under /api/memory.
// Namespaces hold slashes, so every route names its item or namespace
// with query parameters (ns, key, prefix), not with the path.

// noMemory is the answer of every memory route of a server without
// Config.Memory.
func noMemory() error {
	return &apiError{Status: http.StatusNotFound, Code: "no_memory",
		Message: "this server has no long-term memory store",
		Hint:    "the server was started without one: its store keeps no long-term memory, or it could not be opened (see the server's log)"}
}

// memory returns the server's long-term store, or the answer of a server
// without one.
func (s *Server) memory() (longterm.Store, error) {
	if s.cfg.Memory == nil {
		return nil, noMemory()
	}
	return s.cfg.Memory, nil
}

// memoryError turns an error of the long-term store into an answer: an
// argument that breaks the rules into a 400 naming the request's field
// (fields maps longterm's names, such as "namespace", to the request's,
// such as "ns"), a missing item into a 404, a version conflict into a
// 409; anything else as toAPIError does.
func memoryError(err error, fields map[string]string) error {
	if ie, ok := errors.AsType[*longterm.InvalidError](err); ok {
		f := ie.What
		if to, ok := fields[f]; ok {
			f = to
		}
		return &apiError{Status: http.StatusBadRequest, Code: "bad_request", Field: f,
			Message: strings.Replace(err.Error(), "invalid "+ie.What, "invalid "+f, 1), Hint: ie.Rule()}
	}
	switch {
	case errors.Is(err, longterm.ErrNotFound):
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: err.Error(),
			Hint: "GET /api/memory/items?prefix=NAMESPACE lists what is stored there"}
	case errors.Is(err, longterm.ErrConflict):
		return &apiError{Status: http.StatusConflict, Code: "conflict", Message: err.Error(),
			Hint: "another writer changed the item first: read it again and decide again"}
	}
	return err
}

// memoryItem is an item as the API shows it: without its vector.
func memoryItem(it longterm.Item) longterm.Item {
	it.Vector = nil
	if len(it.Value) == 0 {
		it.Value = json.RawMessage("null")
	}
	return it
}

// queryNamespace reads a namespace query parameter, checked.
func queryNamespace(q url.Values, name string) (string, error) {
	ns := q.Get(name)
	if ns == "" {
		return "", badRequest(name, "%s is missing: give the item's namespace, such as users/ada", name)
	}
	if err := longterm.ValidateNamespace(ns); err != nil {
		return "", memoryError(err, map[string]string{"namespace": name})
	}
	return ns, nil
}

// queryKey reads the key query parameter, checked.
func queryKey(q url.Values) (string, error) {
	key := q.Get("key")
	if key == "" {
		return "", badRequest("key", "key is missing: give the item's key")
	}
	if err := longterm.ValidateKey(key); err != nil {
		return "", memoryError(err, nil)
	}
	return key, nil
}

// queryPrefix reads the prefix query parameter: empty for every
// namespace.
func queryPrefix(q url.Values) (string, error) {
	p := q.Get("prefix")
	if err := longterm.ValidatePrefix(p); err != nil {
		return "", memoryError(err, nil)
	}
	return p, nil
}

// memoryLabels reads the label parameters, each NAME=VALUE, by the rules
// of long-term memory's labels.
func memoryLabels(q url.Values) (map[string]string, error) {
	out, err := queryLabels(q, "NAME=VALUE")
	if err != nil {
		return nil, err
	}
	if err := longterm.ValidateLabels(out); err != nil {
		return nil, memoryError(err, map[string]string{"labels": "label"})
	}
	return out, nil
}

// memoryPrefixRequest reads what a request under a prefix names: the
// server's memory, the request's query parameters, and their prefix,
// checked.
func (s *Server) memoryPrefixRequest(r *http.Request) (mem longterm.Store, q url.Values, prefix string, err error) {
	if mem, err = s.memory(); err != nil {
		return nil, nil, "", err
	}
	q = r.URL.Query()
	if prefix, err = queryPrefix(q); err != nil {
		return nil, nil, "", err
	}
	return mem, q, prefix, nil
}

func (s *Server) apiMemoryNamespaces(w http.ResponseWriter, r *http.Request) error {
	mem, q, prefix, err := s.memoryPrefixRequest(r)
	if err != nil {
		return err
	}
	depth, err := queryInt(q, "depth", 0, 0, longterm.MaxNamespaceLen)
	if err != nil {
		return err
	}
	limit, err := queryInt(q, "limit", longterm.DefaultListLimit, 1, longterm.MaxListLimit)
	if err != nil {
		return err
	}
	page, err := mem.Namespaces(r.Context(), longterm.NamespaceOptions{Prefix: prefix, Depth: int(depth), Limit: int(limit), Cursor: q.Get("cursor")})
	if err != nil {
		return memoryError(err, nil)
	}
	ns := page.Namespaces
	if ns == nil {
		ns = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": ns, "next": page.Next})
	return nil
}

func (s *Server) apiMemoryItems(w http.ResponseWriter, r *http.Request) error {
	mem, q, prefix, err := s.memoryPrefixRequest(r)
	if err != nil {
		return err
	}
	labels, err := memoryLabels(q)
	if err != nil {
		return err
	}
	limit, err := queryInt(q, "limit", longterm.DefaultListLimit, 1, longterm.MaxListLimit)
	if err != nil {
		return err
	}
	page, err := mem.List(r.Context(), longterm.ListOptions{Prefix: prefix, Labels: labels, Limit: int(limit), Cursor: q.Get("cursor")})
	if err != nil {
		return memoryError(err, map[string]string{"labels": "label"})
	}
	items := make([]longterm.Item, 0, len(page.Items))
	for _, it := range page.Items {
		items = append(items, memoryItem(it))
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "next": page.Next})
	return nil
}

// memoryItemRequest reads what a request on one item names: the server's
// memory, and the item's namespace (ns) and key, checked.
func (s *Server) memoryItemRequest(r *http.Request) (mem longterm.Store, ns, key string, err error) {
	if mem, err = s.memory(); err != nil {
		return nil, "", "", err
	}
	q := r.URL.Query()
	if ns, err = queryNamespace(q, "ns"); err != nil {
		return nil, "", "", err
	}
	if key, err = queryKey(q); err != nil {
		return nil, "", "", err
	}
	return mem, ns, key, nil
}

func (s *Server) apiMemoryGet(w http.ResponseWriter, r *http.Request) error {
	mem, ns, key, err := s.memoryItemRequest(r)
	if err != nil {
		return err
	}
	it, err := mem.Get(r.Context(), ns, key)
	if err != nil {
		return memoryError(err, map[string]string{"namespace": "ns"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"item": memoryItem(*it)})
	return nil
}

// memoryPut is the body of PUT /api/memory/item.
type memoryPut struct {
	Namespace  string            `json:"namespace"`
	Key        string            `json:"key"`
	Value      json.RawMessage   `json:"value"`
	Text       string            `json:"text"`
	Labels     map[string]string `json:"labels"`
	Source     *longterm.Source  `json:"source"`
	TTLSeconds int64             `json:"ttl_seconds"`
	IfVersion  int64             `json:"if_version"`
}

// maxTTLSeconds bounds ttl_seconds: a hundred years.
const maxTTLSeconds = 100 * 366 * 24 * 3600

func (s *Server) apiMemoryPut(w http.ResponseWriter, r *http.Request) error {
	mem, err := s.memory()
	if err != nil {
		return err
	}
	var req memoryPut
	if err := decodeBody(r, &req, false); err != nil {
		return err
	}
	if req.Namespace == "" {
		return badRequest("namespace", "namespace is missing: give the item's namespace, such as users/ada")
	}
	if req.Key == "" {
		return badRequest("key", "key is missing: give the item's key")
	}
	if len(req.Value) == 0 {
		return badRequest("value", "value is missing: give the item's JSON value (null for none)")
	}
	if req.TTLSeconds < 0 || req.TTLSeconds > maxTTLSeconds {
		return badRequest("ttl_seconds", "ttl_seconds is %d; give 0 (never expires) up to %d", req.TTLSeconds, int64(maxTTLSeconds))
	}
	if req.IfVersion < longterm.IfAbsent {
		return badRequest("if_version", "if_version is %d; give a version, 0 (whatever is stored) or -1 (only create)", req.IfVersion)
	}
	it := longterm.Item{Namespace: req.Namespace, Key: req.Key, Value: req.Value, Text: req.Text, Labels: req.Labels}
	if req.Source != nil {
		it.Source = *req.Source
		if it.Source.Session != "" {
			if err := validID("source.session", it.Source.Session); err != nil {
				return err
			}
		}
		if it.Source.Seq < 0 {
			return badRequest("source.seq", "source.seq is %d, it cannot be negative", it.Source.Seq)
		}
	}
	got, err := mem.Put(r.Context(), it, longterm.PutOptions{IfVersion: req.IfVersion, TTL: time.Duration(req.TTLSeconds) * time.Second})
	if err != nil {
		return memoryError(err, map[string]string{"ttl": "ttl_seconds"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"item": memoryItem(*got)})
	return nil
}

func (s *Server) apiMemoryDelete(w http.ResponseWriter, r *http.Request) error {
	mem, ns, key, err := s.memoryItemRequest(r)
	if err != nil {
		return err
	}
	ifVersion, err := queryInt(r.URL.Query(), "if_version", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	if err := mem.Delete(r.Context(), ns, key, ifVersion); err != nil {
		return memoryError(err, map[string]string{"namespace": "ns"})
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) apiMemoryDeleteNamespace(w http.ResponseWriter, r *http.Request) error {
	mem, err := s.memory()
	if err != nil {
		return err
	}
	n, err := s.deleteNamespace(r, mem, r.URL.Query().Get("prefix"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": n})
	return nil
}

// deleteNamespace erases the namespace prefix and those under it; an
// empty prefix is refused, never taken for every namespace.
func (s *Server) deleteNamespace(r *http.Request, mem longterm.Store, prefix string) (int, error) {
	if prefix == "" {
		return 0, badRequest("prefix", "prefix is missing: give the namespace to delete (with those under it), such as users/ada")
	}
	if err := longterm.ValidatePrefix(prefix); err != nil {
		return 0, memoryError(err, nil)
	}
	n, err := mem.DeleteNamespace(r.Context(), prefix)
	if err != nil {
		return 0, memoryError(err, nil)
	}
	return n, nil
}

// memoryResult is one search result as the API shows it.
type memoryResult struct {
	Item        longterm.Item `json:"item"`
	Score       float64       `json:"score"`
	TextScore   float64       `json:"text_score"`
	VectorScore float64       `json:"vector_score"`
}

// searchMemory runs a search of the request's q, prefix, label and limit.
func (s *Server) searchMemory(r *http.Request, mem longterm.Store, q url.Values) ([]memoryResult, error) {
	query := strings.TrimSpace(q.Get("q"))
	if query == "" {
		return nil, badRequest("q", "q is missing: give the words to search for")
	}
	prefix, err := queryPrefix(q)
	if err != nil {
		return nil, err
	}
	labels, err := memoryLabels(q)
	if err != nil {
		return nil, err
	}
	limit, err := queryInt(q, "limit", longterm.DefaultSearchLimit, 1, longterm.MaxSearchLimit)
	if err != nil {
		return nil, err
	}
	res, err := mem.Search(r.Context(), longterm.SearchOptions{Query: query, Prefix: prefix, Labels: labels, Limit: int(limit)})
	if err != nil {
		return nil, memoryError(err, map[string]string{"query": "q", "labels": "label"})
	}
	out := make([]memoryResult, 0, len(res))
	for _, x := range res {
		out = append(out, memoryResult{Item: memoryItem(x.Item), Score: x.Score, TextScore: x.TextScore, VectorScore: x.VectorScore})
	}
	return out, nil
}

func (s *Server) apiMemorySearch(w http.ResponseWriter, r *http.Request) error {
	mem, err := s.memory()
	if err != nil {
		return err
	}
	res, err := s.searchMemory(r, mem, r.URL.Query())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": res})
	return nil
}

// sourceLink is the address of the event an item came from: the session
// page at that seq, its timeline showing the event; the session's page
// when the item names no seq; "" without a session.
func sourceLink(src longterm.Source) string {
	if src.Session == "" || validID("id", src.Session) != nil {
		return ""
	}
	base := "/sessions/" + src.Session
	if src.Seq <= 0 {
		return base
	}
	from := max(1, src.Seq-PageEvents/2)
	return fmt.Sprintf("%s?from=%d&at=%d#seq-%d", base, from, src.Seq, src.Seq)
}
