package server

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/store/sqlite"
)

// sqliteLongTerm is a long-term store in a SQLite file of its own.
func sqliteLongTerm(t testing.TB) longterm.Store {
	t.Helper()
	lt, err := sqlite.OpenLongTerm(t.Context(), filepath.Join(t.TempDir(), "cairn.db"), sqlite.LongTermOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lt.Close() })
	return lt
}

// TestAPI_Memory runs long-term memory over HTTP on the memory and SQLite
// backends: put, get, list with labels and a cursor, namespaces, search,
// conditional put and delete (409), bad input (400 naming the field),
// missing items (404), delete and namespace delete.
func TestAPI_Memory(t *testing.T) {
	for name, open := range map[string]func(testing.TB) longterm.Store{"memory": longTermStore, "sqlite": sqliteLongTerm} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, testcheck.MemoryStore(t), Config{Memory: open(t)})
			memoryContract(t, h)
		})
	}
}

func memoryContract(t *testing.T, h *harness) {
	put := func(body map[string]any) map[string]any {
		t.Helper()
		r := h.do("PUT", "/api/memory/item", body)
		wantStatus(t, fmt.Sprintf("put %v", body["key"]), r, http.StatusOK)
		return r.JSON(t)["item"].(map[string]any)
	}
	food := put(map[string]any{"namespace": "users/ada", "key": "food", "value": map[string]any{"food": "pizza"},
		"text": "Ada loves pizza with olives", "labels": map[string]string{"kind": "preference"},
		"source": map[string]any{"session": "trip", "seq": 4}, "ttl_seconds": 3600})
	if food["version"].(float64) <= 0 || food["expires_at"] == nil || food["source"].(map[string]any)["session"] != "trip" {
		t.Errorf("put returned %v; want a version, an expiry and the source", food)
	}
	put(map[string]any{"namespace": "users/ada/notes", "key": "city", "value": "Lisbon", "text": "Ada is going to Lisbon"})
	if empty := put(map[string]any{"namespace": "users/ada/notes", "key": "nothing", "value": nil}); empty["value"] != nil {
		t.Errorf("a put of null: %v, want the value null", empty)
	}
	wantStatus(t, "delete", h.do("DELETE", "/api/memory/item?ns=users/ada/notes&key=nothing", nil), http.StatusNoContent)
	put(map[string]any{"namespace": "users/adam", "key": "food", "value": "soup", "text": "Adam loves soup", "labels": map[string]string{"kind": "preference"}})

	// Get.
	r := h.do("GET", "/api/memory/item?ns=users/ada&key=food", nil)
	wantStatus(t, "get", r, http.StatusOK)
	got := r.JSON(t)["item"].(map[string]any)
	if got["value"].(map[string]any)["food"] != "pizza" || got["version"] != food["version"] {
		t.Errorf("get: %v, want the item put", got)
	}
	if _, ok := got["vector"]; ok {
		t.Errorf("get shows a vector: %v", got)
	}

	// List: a prefix holds its own namespace and those under it, not a
	// sibling that starts alike; labels filter; the cursor pages.
	keys := func(path string) (string, string) {
		t.Helper()
		r := h.do("GET", path, nil)
		wantStatus(t, path, r, http.StatusOK)
		var page struct {
			Items []longterm.Item `json:"items"`
			Next  string          `json:"next"`
		}
		r.Decode(t, &page)
		var out []string
		for _, it := range page.Items {
			out = append(out, it.Namespace+":"+it.Key)
		}
		return strings.Join(out, " "), page.Next
	}
	if got, _ := keys("/api/memory/items?prefix=users/ada"); got != "users/ada:food users/ada/notes:city" {
		t.Errorf("items under users/ada: %s", got)
	}
	if got, _ := keys("/api/memory/items?label=kind=preference"); got != "users/ada:food users/adam:food" {
		t.Errorf("items labelled kind=preference: %s", got)
	}
	var all []string
	for path, pages := "/api/memory/items?limit=2", 0; ; pages++ {
		if pages > 5 {
			t.Fatal("the cursor does not end")
		}
		got, next := keys(path)
		all = append(all, got)
		if next == "" {
			break
		}
		path = "/api/memory/items?limit=2&cursor=" + url.QueryEscape(next)
	}
	if got := strings.Join(all, " "); got != "users/ada:food users/ada/notes:city users/adam:food" {
		t.Errorf("every item through the cursor: %s", got)
	}

	// Namespaces.
	r = h.do("GET", "/api/memory/namespaces?prefix=users&depth=2", nil)
	wantStatus(t, "namespaces", r, http.StatusOK)
	if ns := fmt.Sprint(r.JSON(t)["namespaces"]); ns != "[users/ada users/adam]" {
		t.Errorf("namespaces under users cut to 2 segments: %s", ns)
	}

	// Search, best first, with a prefix.
	r = h.do("GET", "/api/memory/search?q=pizza+lisbon+olives", nil)
	wantStatus(t, "search", r, http.StatusOK)
	var found struct {
		Results []struct {
			Item  longterm.Item `json:"item"`
			Score float64       `json:"score"`
		} `json:"results"`
	}
	r.Decode(t, &found)
	if len(found.Results) != 2 || found.Results[0].Item.Key != "food" || found.Results[0].Score != 1 || found.Results[1].Item.Key != "city" {
		t.Errorf("search: %+v; want food (score 1) then city", found.Results)
	}
	r = h.do("GET", "/api/memory/search?q=loves&prefix=users/adam", nil)
	r.Decode(t, &found)
	if len(found.Results) != 1 || found.Results[0].Item.Namespace != "users/adam" {
		t.Errorf("search under users/adam: %+v", found.Results)
	}

	// Conditional writes.
	v := int64(food["version"].(float64))
	r = h.do("PUT", "/api/memory/item", map[string]any{"namespace": "users/ada", "key": "food", "value": "sushi", "if_version": v + 100})
	wantStatus(t, "put at a stale version", r, http.StatusConflict)
	if e := r.Err(t); e["code"] != "conflict" {
		t.Errorf("put at a stale version: %v", e)
	}
	r = h.do("PUT", "/api/memory/item", map[string]any{"namespace": "users/ada", "key": "food", "value": "sushi", "if_version": -1})
	wantStatus(t, "create of an item that exists", r, http.StatusConflict)
	replaced := put(map[string]any{"namespace": "users/ada", "key": "food", "value": "sushi", "if_version": v})
	if int64(replaced["version"].(float64)) <= v || replaced["expires_at"] != nil {
		t.Errorf("replace: %v; want a newer version and no expiry", replaced)
	}
	r = h.do("DELETE", fmt.Sprintf("/api/memory/item?ns=users/ada&key=food&if_version=%d", v), nil)
	wantStatus(t, "delete at a stale version", r, http.StatusConflict)

	// Bad input names the field, and the hint the rule that was broken
	// (hint: a part of it, where given).
	const rules = "slash paths of segments"
	for _, tc := range []struct {
		method, path string
		body         any
		field, hint  string
	}{
		{"PUT", "/api/memory/item", `{"namespace":"users//ada","key":"k","value":1}`, "namespace", rules},
		{"PUT", "/api/memory/item", `{"namespace":"users/ada","key":"a b","value":1}`, "key", rules},
		{"PUT", "/api/memory/item", `{"namespace":"users/ada","key":"k"}`, "value", ""},
		{"PUT", "/api/memory/item", `{"namespace":"users/ada","key":"k","value":1,"ttl_seconds":-5}`, "ttl_seconds", ""},
		{"PUT", "/api/memory/item", `{"namespace":"users/ada","key":"k","value":1,"labels":{"":"x"}}`, "labels", rules},
		{"PUT", "/api/memory/item", `{"namespace":"users/ada","key":"k","value":1,"source":{"session":"a b"}}`, "source.session", ""},
		{"PUT", "/api/memory/item", `{"namespace":"users/ada","key":"k","value":1,"colour":"red"}`, "colour", ""},
		{"GET", "/api/memory/item?ns=/users&key=k", nil, "ns", rules},
		{"GET", "/api/memory/item?ns=users", nil, "key", ""},
		{"GET", "/api/memory/items?label=nolabel", nil, "label", ""},
		{"GET", "/api/memory/items?cursor=bogus", nil, "cursor", ""},
		{"GET", "/api/memory/items?limit=0", nil, "limit", ""},
		{"GET", "/api/memory/namespaces?prefix=users/", nil, "prefix", rules},
		{"GET", "/api/memory/search?prefix=users", nil, "q", ""},
		{"DELETE", "/api/memory/item?ns=users/ada&key=food&if_version=-3", nil, "if_version", ""},
		{"DELETE", "/api/memory/namespace?prefix=", nil, "prefix", ""},
	} {
		r := h.do(tc.method, tc.path, tc.body)
		wantStatus(t, tc.method+" "+tc.path, r, http.StatusBadRequest)
		e := r.Err(t)
		if e["field"] != tc.field {
			t.Errorf("%s %s: error %v, want field %q", tc.method, tc.path, e, tc.field)
		}
		if hint, _ := e["hint"].(string); !strings.Contains(hint, tc.hint) {
			t.Errorf("%s %s: hint %q, want one with %q", tc.method, tc.path, hint, tc.hint)
		}
	}

	// Missing items.
	r = h.do("GET", "/api/memory/item?ns=users/ada&key=nope", nil)
	wantStatus(t, "get of a missing item", r, http.StatusNotFound)
	if e := r.Err(t); e["code"] != "not_found" {
		t.Errorf("get of a missing item: %v", e)
	}
	wantStatus(t, "delete of a missing item", h.do("DELETE", "/api/memory/item?ns=users/ada&key=nope", nil), http.StatusNotFound)

	// Delete, then the namespace.
	wantStatus(t, "delete", h.do("DELETE", "/api/memory/item?ns=users/ada&key=food", nil), http.StatusNoContent)
	wantStatus(t, "get after delete", h.do("GET", "/api/memory/item?ns=users/ada&key=food", nil), http.StatusNotFound)
	r = h.do("DELETE", "/api/memory/namespace?prefix=users/ada", nil)
	wantStatus(t, "delete namespace", r, http.StatusOK)
	if n := r.JSON(t)["deleted"]; n != 1.0 {
		t.Errorf("delete of users/ada erased %v items, want 1 (users/ada/notes:city; not users/adam)", n)
	}
	if got, _ := keys("/api/memory/items"); got != "users/adam:food" {
		t.Errorf("items after the namespace delete: %s", got)
	}
}

// TestAPI_MemoryAbsent: a server without long-term memory answers its
// routes and its page with 404, code no_memory and a hint, and links no
// memory page.
func TestAPI_MemoryAbsent(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{})
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/memory/namespaces", ""},
		{"GET", "/api/memory/items", ""},
		{"GET", "/api/memory/item?ns=users/ada&key=food", ""},
		{"PUT", "/api/memory/item", `{"namespace":"users/ada","key":"food","value":1}`},
		{"DELETE", "/api/memory/item?ns=users/ada&key=food", ""},
		{"DELETE", "/api/memory/namespace?prefix=users", ""},
		{"GET", "/api/memory/search?q=pizza", ""},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := h.do(c.method, c.path, body)
		wantStatus(t, c.method+" "+c.path, r, http.StatusNotFound)
		e := r.Err(t)
		if e["code"] != "no_memory" || !strings.Contains(e["hint"].(string), "without one") {
			t.Errorf("%s %s: error %v, want no_memory with a hint", c.method, c.path, e)
		}
	}
	cookie, _ := signIn(t, h)
	jar := map[string]string{"Cookie": CookieName + "=" + cookie}
	r := h.doWith("GET", "/memory", nil, jar)
	wantStatus(t, "the memory page", r, http.StatusNotFound)
	if !strings.Contains(string(r.Body), "no long-term memory store") {
		t.Errorf("the memory page of a server without memory does not say why: %s", clipBody(r.Body))
	}
	r = h.doWith("GET", "/sessions", nil, jar)
	if strings.Contains(string(r.Body), `href="/memory"`) {
		t.Error("the sessions page links a memory page the server does not have")
	}
}

// TestUI_Memory: the memory page lists namespaces, items and search
// results with links to their sources, and its forms delete an item and
// a namespace, with the CSRF token and a confirmation.
func TestUI_Memory(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{Memory: longTermStore(t)})
	ctx := t.Context()
	mem := h.srv.cfg.Memory
	for _, it := range []longterm.Item{
		{Namespace: "users/ada", Key: "food", Value: []byte(`"pizza"`), Text: "Ada loves pizza", Labels: map[string]string{"kind": "preference"}, Source: longterm.Source{Session: "trip", Seq: 250}},
		{Namespace: "users/ada/notes", Key: "city", Value: []byte(`"Lisbon"`)},
		{Namespace: "users/bob", Key: "pet", Value: []byte(`"a cat <b>"`)},
	} {
		if _, err := mem.Put(ctx, it, longterm.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	jar, csrf, page := browse(t, h)
	body := page("/sessions")
	if !strings.Contains(body, `href="/memory"`) {
		t.Error("the sessions page does not link the memory page")
	}
	body = page("/memory?ns=users/ada")
	for _, want := range []string{`href="/memory?ns=users/bob"`, `data-key="food"`, `data-key="city"`, "kind=preference",
		`href="/sessions/trip?from=150&amp;at=250#seq-250"`, `action="/memory/delete-namespace"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page of users/ada lacks %s: %s", want, body)
		}
	}
	if strings.Contains(body, `data-key="pet"`) {
		t.Error("the page of users/ada shows users/bob's item")
	}
	body = page("/memory?q=cat&prefix=users")
	if !strings.Contains(body, `id="mem-results"`) || !strings.Contains(body, "a cat &lt;b&gt;") || strings.Contains(body, `data-key="food"`) {
		t.Errorf("the search for cat: %s", clipBody([]byte(body[strings.Index(body, "<main"):])))
	}

	// Deletes need the confirmation and the CSRF token.
	r := h.doWith("POST", "/memory/delete", "ns=users/ada&key=food&csrf="+csrf, withForm(jar))
	wantStatus(t, "delete without confirmation", r, http.StatusBadRequest)
	r = h.doWith("POST", "/memory/delete", "ns=users/ada&key=food&confirm=food", withForm(jar))
	wantStatus(t, "delete without the CSRF token", r, http.StatusForbidden)
	r = h.doWith("POST", "/memory/delete", "ns=users/ada&key=food&confirm=food&csrf="+csrf, withForm(jar))
	wantStatus(t, "delete", r, http.StatusSeeOther)
	if body := page(r.Header.Get("Location")); !strings.Contains(body, "Deleted food of users/ada.") {
		t.Error("the page after the delete does not say what was deleted")
	}
	if _, err := mem.Get(ctx, "users/ada", "food"); err == nil {
		t.Error("the item is still there")
	}
	r = h.doWith("POST", "/memory/delete-namespace", "prefix=users/ada&confirm=users/ada&csrf="+csrf, withForm(jar))
	wantStatus(t, "delete namespace", r, http.StatusSeeOther)
	if body := page(r.Header.Get("Location")); !strings.Contains(body, "Deleted namespace users/ada and those under it: 1 item.") {
		t.Error("the page after the namespace delete does not say what was deleted")
	}
	ns, err := mem.Namespaces(ctx, longterm.NamespaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ns.Namespaces) != "[users/bob]" {
		t.Errorf("namespaces after the delete: %v", ns.Namespaces)
	}

	// A read-only server shows no delete form and refuses the action.
	ro := newHarness(t, testcheck.MemoryStore(t), Config{Memory: mem, ReadOnly: true})
	jar, csrf, _ = browse(t, ro)
	r = ro.doWith("GET", "/memory?ns=users/bob", nil, jar)
	wantStatus(t, "read-only memory page", r, http.StatusOK)
	if strings.Contains(string(r.Body), "/memory/delete") {
		t.Error("the read-only memory page offers a delete")
	}
	r = ro.doWith("POST", "/memory/delete", "ns=users/bob&key=pet&confirm=pet&csrf="+csrf, withForm(jar))
	wantStatus(t, "read-only delete", r, http.StatusForbidden)
}
