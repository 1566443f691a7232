package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
)

// TestOpenAPI_MatchesHandlers checks the document served at
// /api/openapi.json against the real handlers: every route under /api is
// documented and every documented operation is a route; every status each
// operation documents is produced by a request below, and every answer
// has a documented status and the documented shape.
func TestOpenAPI_MatchesHandlers(t *testing.T) {
	notes := t.TempDir() + "/notes.txt"
	h := newHarness(t, testcheck.MemoryStore(t), Config{Agent: fixtureAgent(t, notes), Memory: longTermStore(t), MaxBodyBytes: 64 << 10, MaxImportBytes: 64 << 10})
	bare := newHarness(t, testcheck.MemoryStore(t), Config{}) // no agent, no long-term memory
	ro := newHarness(t, testcheck.MemoryStore(t), Config{ReadOnly: true})

	r := h.do("GET", "/api/openapi.json", nil)
	wantStatus(t, "openapi.json", r, http.StatusOK)
	var doc map[string]any
	r.Decode(t, &doc)
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi %v, want 3.1.0", doc["openapi"])
	}
	ops := operations(t, doc)

	// Every route is documented, every documented operation is a route.
	var routes []string
	for _, rt := range h.srv.routes {
		if rt.api {
			routes = append(routes, rt.method+" "+rt.pattern)
		}
	}
	var documented []string
	for k := range ops {
		documented = append(documented, k)
	}
	sort.Strings(routes)
	sort.Strings(documented)
	if !slices.Equal(routes, documented) {
		t.Fatalf("routes and the document differ:\nroutes:     %v\ndocumented: %v", routes, documented)
	}

	// The fixtures the requests need.
	workersStore, _ := workersFixture(t, time.Now().Add(-10*time.Minute))
	writeSession(t, h.store, "s1", chatEvents(14))
	writeSession(t, bare.store, "s1", chatEvents(14))
	callA := awaitingSession(t, h.store, h.srv.cfg.Agent, "await")
	callB := awaitingSession(t, h.store, h.srv.cfg.Agent, "await2")
	awaitingSession(t, bare.store, fixtureAgent(t, notes), "await")
	cairnDoc := h.do("GET", "/api/sessions/s1/export", nil).Body
	h.srv.runs.mu.Lock()
	h.srv.runs.active["busy"] = true // as if this server ran session "busy"
	h.srv.runs.mu.Unlock()
	writeSession(t, h.store, "busy", chatEvents(3))
	ev := func(expect int, kind string, data string) string {
		return fmt.Sprintf(`{"expect_seq":%d,"events":[{"kind":%q,"data":%s}]}`, expect, kind, data)
	}
	big := `"` + strings.Repeat("x", 70<<10) + `"`

	type call struct {
		op     string // METHOD path as documented
		status int
		do     func() response
	}
	req := func(hh *harness, method, path string, body any) func() response {
		return func() response { return hh.do(method, path, body) }
	}
	calls := []call{
		{"GET /api/openapi.json", 200, req(h, "GET", "/api/openapi.json", nil)},
		{"GET /api/sessions", 200, req(h, "GET", "/api/sessions?limit=2&status=completed,awaiting_approval&label=team=travel", nil)},
		{"GET /api/sessions", 200, req(h, "GET", "/api/sessions?q=turn", nil)},
		{"GET /api/sessions", 400, req(h, "GET", "/api/sessions?limit=-1", nil)},
		{"POST /api/sessions", 201, req(h, "POST", "/api/sessions", `{"id":"new1","labels":{"a":"b"}}`)},
		{"POST /api/sessions", 201, req(h, "POST", "/api/sessions", nil)},
		{"POST /api/sessions", 400, req(h, "POST", "/api/sessions", `{"id":"no spaces"}`)},
		{"POST /api/sessions", 409, req(h, "POST", "/api/sessions", `{"id":"s1"}`)},
		{"GET /api/sessions/{id}", 200, req(h, "GET", "/api/sessions/s1", nil)},
		{"GET /api/sessions/{id}", 200, req(h, "GET", "/api/sessions/await", nil)},
		{"GET /api/sessions/{id}", 200, req(h, "GET", "/api/sessions/new1", nil)},
		{"GET /api/sessions/{id}", 400, req(h, "GET", "/api/sessions/a.b", nil)},
		{"GET /api/sessions/{id}", 404, req(h, "GET", "/api/sessions/nope", nil)},
		{"GET /api/sessions/{id}/state", 200, req(h, "GET", "/api/sessions/s1/state?at=0", nil)},
		{"GET /api/sessions/{id}/state", 200, req(h, "GET", "/api/sessions/await/state", nil)},
		{"GET /api/sessions/{id}/state", 400, req(h, "GET", "/api/sessions/s1/state?at=99", nil)},
		{"GET /api/sessions/{id}/state", 404, req(h, "GET", "/api/sessions/nope/state", nil)},
		{"GET /api/sessions/{id}/events", 200, req(h, "GET", "/api/sessions/s1/events?after=3&limit=5", nil)},
		{"GET /api/sessions/{id}/events", 200, req(h, "GET", "/api/sessions/new1/events", nil)},
		{"GET /api/sessions/{id}/events", 400, req(h, "GET", "/api/sessions/s1/events?after=-2", nil)},
		{"GET /api/sessions/{id}/events", 404, req(h, "GET", "/api/sessions/nope/events", nil)},
		{"POST /api/sessions/{id}/events", 200, req(h, "POST", "/api/sessions/new1/events", ev(0, "message.user", `{"parts":[{"type":"text","text":"hi"}]}`))},
		{"POST /api/sessions/{id}/events", 400, req(h, "POST", "/api/sessions/new1/events", ev(1, "message.user", `{"parts":[{"type":"text","text":1}]}`))},
		{"POST /api/sessions/{id}/events", 404, req(h, "POST", "/api/sessions/nope/events", ev(0, "message.system", `{"text":"x"}`))},
		{"POST /api/sessions/{id}/events", 409, req(h, "POST", "/api/sessions/new1/events", ev(0, "message.system", `{"text":"x"}`))},
		{"POST /api/sessions/{id}/events", 409, req(h, "POST", "/api/sessions/busy/events", ev(3, "message.system", `{"text":"x"}`))},
		{"POST /api/sessions/{id}/events", 413, req(h, "POST", "/api/sessions/new1/events", ev(1, "message.system", `{"text":`+big+`}`))},
		{"GET /api/sessions/{id}/stream", 200, func() response { return firstStreamEvent(t, h, "/api/sessions/s1/stream?after=12") }},
		{"GET /api/sessions/{id}/stream", 400, req(h, "GET", "/api/sessions/s1/stream?after=x", nil)},
		{"GET /api/sessions/{id}/stream", 404, req(h, "GET", "/api/sessions/nope/stream", nil)},
		{"POST /api/sessions/{id}/approvals", 400, req(h, "POST", "/api/sessions/await/approvals", `{"call_id":"`+callA+`"}`)},
		{"POST /api/sessions/{id}/approvals", 404, req(h, "POST", "/api/sessions/nope/approvals", `{"call_id":"c","approved":true}`)},
		{"POST /api/sessions/{id}/approvals", 409, req(h, "POST", "/api/sessions/await/approvals", `{"call_id":"nope","approved":true}`)},
		{"POST /api/sessions/{id}/approvals", 501, req(bare, "POST", "/api/sessions/await/approvals", `{"call_id":"`+callA+`","approved":true,"resume":true}`)},
		{"POST /api/sessions/{id}/approvals", 200, req(h, "POST", "/api/sessions/await/approvals", `{"call_id":"`+callA+`","approved":false,"note":"not now"}`)},
		{"POST /api/sessions/{id}/approvals", 409, req(h, "POST", "/api/sessions/await/approvals", `{"call_id":"`+callA+`","approved":true}`)},
		{"POST /api/sessions/{id}/resume", 400, req(h, "POST", "/api/sessions/await/resume", `{"prompt":7}`)},
		{"POST /api/sessions/{id}/resume", 404, req(h, "POST", "/api/sessions/nope/resume", nil)},
		{"POST /api/sessions/{id}/resume", 409, req(h, "POST", "/api/sessions/s1/resume", nil)},
		{"POST /api/sessions/{id}/resume", 409, req(h, "POST", "/api/sessions/await2/resume", nil)},
		{"POST /api/sessions/{id}/resume", 501, req(bare, "POST", "/api/sessions/s1/resume", nil)},
		{"POST /api/sessions/{id}/resume", 202, req(h, "POST", "/api/sessions/await/resume", `{}`)},
		{"POST /api/sessions/{id}/approvals", 200, req(h, "POST", "/api/sessions/await2/approvals", `{"call_id":"`+callB+`","approved":true}`)},
		{"POST /api/sessions/{id}/fork", 201, req(h, "POST", "/api/sessions/s1/fork", `{"at":5,"as":"s1-fork"}`)},
		{"POST /api/sessions/{id}/fork", 201, req(h, "POST", "/api/sessions/s1/fork", nil)},
		{"POST /api/sessions/{id}/fork", 400, req(h, "POST", "/api/sessions/s1/fork", `{"at":99}`)},
		{"POST /api/sessions/{id}/fork", 404, req(h, "POST", "/api/sessions/nope/fork", `{"at":1}`)},
		{"POST /api/sessions/{id}/fork", 409, req(h, "POST", "/api/sessions/s1/fork", `{"at":1,"as":"s1-fork"}`)},
		{"GET /api/sessions/{id}/export", 200, req(h, "GET", "/api/sessions/s1/export?format=openai", nil)},
		{"GET /api/sessions/{id}/export", 200, req(h, "GET", "/api/sessions/await/export?format=checkpoint", nil)},
		{"GET /api/sessions/{id}/export", 400, req(h, "GET", "/api/sessions/s1/export?format=yaml", nil)},
		{"GET /api/sessions/{id}/export", 404, req(h, "GET", "/api/sessions/nope/export", nil)},
		{"POST /api/import", 201, req(h, "POST", "/api/import?as=s1-copy", cairnDoc)},
		{"POST /api/import", 201, req(h, "POST", "/api/import?format=openai", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`)},
		{"POST /api/import", 400, req(h, "POST", "/api/import", `{"messages":[{"role":"robot","content":"hi"}]}`)},
		{"POST /api/import", 409, req(h, "POST", "/api/import?as=s1", cairnDoc)},
		{"POST /api/import", 413, req(h, "POST", "/api/import", `{"messages":[{"role":"user","content":`+big+`}]}`)},
		{"DELETE /api/sessions/{id}", 400, req(h, "DELETE", "/api/sessions/a%2Fb", nil)},
		{"DELETE /api/sessions/{id}", 404, req(h, "DELETE", "/api/sessions/nope", nil)},
		{"DELETE /api/sessions/{id}", 409, req(h, "DELETE", "/api/sessions/busy", nil)},
		{"DELETE /api/sessions/{id}", 204, req(h, "DELETE", "/api/sessions/s1-fork", nil)},

		{"PUT /api/memory/item", 200, req(h, "PUT", "/api/memory/item", `{"namespace":"users/ada","key":"food","value":{"food":"pizza"},"text":"Ada loves pizza","labels":{"kind":"preference"},"source":{"session":"s1","seq":3},"ttl_seconds":3600}`)},
		{"PUT /api/memory/item", 200, req(h, "PUT", "/api/memory/item", `{"namespace":"users/ada/notes","key":"city","value":"Lisbon","if_version":-1}`)},
		{"PUT /api/memory/item", 400, req(h, "PUT", "/api/memory/item", `{"namespace":"users//ada","key":"k","value":1}`)},
		{"PUT /api/memory/item", 404, req(bare, "PUT", "/api/memory/item", `{"namespace":"users/ada","key":"k","value":1}`)},
		{"PUT /api/memory/item", 409, req(h, "PUT", "/api/memory/item", `{"namespace":"users/ada/notes","key":"city","value":"Porto","if_version":-1}`)},
		{"PUT /api/memory/item", 413, req(h, "PUT", "/api/memory/item", `{"namespace":"users/ada","key":"big","value":`+big+`}`)},
		{"GET /api/memory/item", 200, req(h, "GET", "/api/memory/item?ns=users/ada&key=food", nil)},
		{"GET /api/memory/item", 400, req(h, "GET", "/api/memory/item?ns=users/ada&key=a+b", nil)},
		{"GET /api/memory/item", 404, req(h, "GET", "/api/memory/item?ns=users/ada&key=nope", nil)},
		{"GET /api/memory/item", 404, req(bare, "GET", "/api/memory/item?ns=users/ada&key=food", nil)},
		{"GET /api/memory/items", 200, req(h, "GET", "/api/memory/items?prefix=users&label=kind=preference&limit=10", nil)},
		{"GET /api/memory/items", 400, req(h, "GET", "/api/memory/items?cursor=bogus", nil)},
		{"GET /api/memory/items", 404, req(bare, "GET", "/api/memory/items", nil)},
		{"GET /api/memory/namespaces", 200, req(h, "GET", "/api/memory/namespaces?prefix=users&depth=2", nil)},
		{"GET /api/memory/namespaces", 400, req(h, "GET", "/api/memory/namespaces?prefix=/users", nil)},
		{"GET /api/memory/namespaces", 404, req(bare, "GET", "/api/memory/namespaces", nil)},
		{"GET /api/memory/search", 200, req(h, "GET", "/api/memory/search?q=pizza&prefix=users", nil)},
		{"GET /api/memory/search", 400, req(h, "GET", "/api/memory/search?q=", nil)},
		{"GET /api/memory/search", 404, req(bare, "GET", "/api/memory/search?q=pizza", nil)},
		{"GET /api/fleet", 200, req(h, "GET", "/api/fleet?since=7d", nil)},
		{"GET /api/fleet", 400, req(h, "GET", "/api/fleet?outcome=exploded", nil)},
		{"GET /api/search", 200, req(h, "GET", "/api/search?q=hello", nil)},
		{"GET /api/search", 400, req(h, "GET", "/api/search?q=hello&limit=0", nil)},
		{"GET /api/search", 501, req(newHarness(t, noSearch{testcheck.MemoryStore(t)}, Config{}), "GET", "/api/search?q=hello", nil)},
		{"GET /api/workers", 200, req(h, "GET", "/api/workers", nil)},
		{"GET /api/workers", 200, req(newHarness(t, workersStore, Config{}), "GET", "/api/workers", nil)},
		{"DELETE /api/memory/item", 400, req(h, "DELETE", "/api/memory/item?ns=users/ada", nil)},
		{"DELETE /api/memory/item", 404, req(h, "DELETE", "/api/memory/item?ns=users/ada&key=nope", nil)},
		{"DELETE /api/memory/item", 409, req(h, "DELETE", "/api/memory/item?ns=users/ada&key=food&if_version=999", nil)},
		{"DELETE /api/memory/item", 204, req(h, "DELETE", "/api/memory/item?ns=users/ada&key=food", nil)},
		{"DELETE /api/memory/namespace", 400, req(h, "DELETE", "/api/memory/namespace", nil)},
		{"DELETE /api/memory/namespace", 404, req(bare, "DELETE", "/api/memory/namespace?prefix=users", nil)},
		{"DELETE /api/memory/namespace", 200, req(h, "DELETE", "/api/memory/namespace?prefix=users", nil)},
	}
	// Every operation refuses a request without a token, and every write
	// a read-only server.
	for op := range ops {
		method, path, _ := strings.Cut(op, " ")
		p := strings.ReplaceAll(path, "{id}", "s1")
		calls = append(calls, call{op, 401, func() response { return h.doWith(method, p, "{}", nil) }})
		if method != "GET" {
			calls = append(calls, call{op, 403, req(ro, method, p, "{}")})
		}
	}

	sc := &schemaChecker{doc: doc}
	covered := map[string]bool{}
	for i, c := range calls {
		op, ok := ops[c.op]
		if !ok {
			t.Fatalf("call %d: %s is not documented", i, c.op)
		}
		r := c.do()
		what := fmt.Sprintf("call %d (%s)", i, c.op)
		if r.Status != c.status {
			t.Errorf("%s: status %d, want %d: %s", what, r.Status, c.status, clipBody(r.Body))
			continue
		}
		resp, ok := op.responses[strconv.Itoa(r.Status)]
		if !ok {
			t.Errorf("%s: status %d is not documented", what, r.Status)
			continue
		}
		covered[c.op+" "+strconv.Itoa(r.Status)] = true
		if err := checkResponse(sc, resp, r); err != nil {
			t.Errorf("%s, status %d: %v\nbody: %s", what, r.Status, err, clipBody(r.Body))
		}
	}
	for k, op := range ops {
		for status := range op.responses {
			if !covered[k+" "+status] {
				t.Errorf("%s documents status %s, which no request here produced", k, status)
			}
		}
	}
}

type operation struct {
	responses map[string]map[string]any
}

func operations(t *testing.T, doc map[string]any) map[string]operation {
	ops := map[string]operation{}
	for path, item := range doc["paths"].(map[string]any) {
		for method, v := range item.(map[string]any) {
			if method == "parameters" {
				continue
			}
			o := operation{responses: map[string]map[string]any{}}
			for status, resp := range v.(map[string]any)["responses"].(map[string]any) {
				o.responses[status] = resp.(map[string]any)
			}
			ops[strings.ToUpper(method)+" "+path] = o
		}
	}
	if len(ops) == 0 {
		t.Fatal("the document has no operations")
	}
	return ops
}

// checkResponse checks an answer against its documented response: the
// content type, and the body against the schema.
func checkResponse(sc *schemaChecker, doc map[string]any, r response) error {
	content, _ := doc["content"].(map[string]any)
	if len(content) == 0 {
		if len(r.Body) != 0 {
			return fmt.Errorf("a body where the document says none: %s", clipBody(r.Body))
		}
		return nil
	}
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	media, ok := content[ct].(map[string]any)
	if !ok {
		return fmt.Errorf("content type %q is not documented", ct)
	}
	schema := media["schema"].(map[string]any)
	if ct == "text/event-stream" {
		var e any
		if err := json.Unmarshal(r.Body, &e); err != nil {
			return fmt.Errorf("the stream's first data is not JSON: %v", err)
		}
		return sc.check(map[string]any{"$ref": "#/components/schemas/Event"}, e, "data")
	}
	var v any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		return fmt.Errorf("the body is not JSON: %v", err)
	}
	return sc.check(schema, v, "body")
}

// firstStreamEvent opens a stream and returns its first event's data as
// the body of a response.
func firstStreamEvent(t *testing.T, h *harness, path string) response {
	s := openStream(t, h, path, "")
	defer s.close()
	ev := s.raw(t)
	return response{Status: s.res.StatusCode, Header: s.res.Header, Body: []byte(ev.Data)}
}

func clipBody(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// noSearch hides every optional ability of the store it holds, search
// among them, as an encrypting store has no search.
type noSearch struct{ cairn.Store }
