package server

import (
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/cairnhq/cairn/longterm"
)

// The inspector's memory page: the namespaces of Config.Memory, the items
// of one, a search, and the forms that delete an item or a namespace.

// memoryData is the memory page.
type memoryData struct {
	base
	Namespaces []string
	NSNext     string // the address of the next page of namespaces
	NS         string // the namespace whose items are shown
	Items      []memoryRow
	ItemsNext  string // the address of the next page of items
	Q          string // the search
	Prefix     string // the search's namespace prefix
	Searched   bool
	Results    []memoryRow
}

// memoryRow is an item as the page shows it.
type memoryRow struct {
	longterm.Item
	Snippet   string
	Score     float64
	Ranked    bool   // a search result: its score is shown
	SourceURL string // the address of the event it came from, or ""
	Deeper    bool   // the item is in a namespace under the one shown
	CanWrite  bool   // the delete form is shown, with the page's CSRF token
	CSRF      string
}

func (d *memoryData) row(it longterm.Item, ns string) memoryRow {
	text := it.Text
	if text == "" {
		text = string(it.Value)
	}
	return memoryRow{Item: it, Snippet: strings.Join(strings.Fields(text), " "), SourceURL: sourceLink(it.Source),
		Deeper: ns != "" && it.Namespace != ns, CanWrite: d.CanWrite, CSRF: d.CSRF}
}

// namespaceURL is the address of a namespace's items on the memory page,
// its slashes kept: a valid namespace needs no escaping.
func namespaceURL(ns string) template.URL {
	if longterm.ValidateNamespace(ns) != nil {
		return template.URL("/memory?ns=" + url.QueryEscape(ns))
	}
	return template.URL("/memory?ns=" + ns)
}

// memoryPageItems is how many namespaces, and items, a page shows.
const memoryPageItems = 100

func (s *Server) uiMemory(w http.ResponseWriter, r *http.Request) error {
	mem, err := s.memory()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	d := memoryData{base: s.base(r, "Memory", "memory"), NS: q.Get("ns"), Q: strings.TrimSpace(q.Get("q")), Prefix: q.Get("prefix")}
	ctx := r.Context()

	nsq := url.Values{}
	nsPage, err := mem.Namespaces(ctx, longterm.NamespaceOptions{Limit: memoryPageItems, Cursor: q.Get("ns_cursor")})
	if err != nil {
		return memoryError(err, map[string]string{"cursor": "ns_cursor"})
	}
	d.Namespaces = nsPage.Namespaces
	if nsPage.Next != "" {
		if d.NS != "" {
			nsq.Set("ns", d.NS)
		}
		nsq.Set("ns_cursor", nsPage.Next)
		d.NSNext = "/memory?" + nsq.Encode()
	}

	if d.NS != "" {
		if err := longterm.ValidateNamespace(d.NS); err != nil {
			return memoryError(err, map[string]string{"namespace": "ns"})
		}
		page, err := mem.List(ctx, longterm.ListOptions{Prefix: d.NS, Limit: memoryPageItems, Cursor: q.Get("cursor")})
		if err != nil {
			return memoryError(err, nil)
		}
		for _, it := range page.Items {
			d.Items = append(d.Items, d.row(it, d.NS))
		}
		if page.Next != "" {
			iq := url.Values{"ns": {d.NS}, "cursor": {page.Next}}
			d.ItemsNext = "/memory?" + iq.Encode()
		}
	}

	if d.Q != "" {
		res, err := s.searchMemory(r, mem, q)
		if err != nil {
			return err
		}
		d.Searched = true
		for _, x := range res {
			row := d.row(x.Item, "")
			row.Score, row.Ranked = x.Score, true
			d.Results = append(d.Results, row)
		}
	}
	return s.render(w, http.StatusOK, "memory.html", d)
}

// uiMemoryDelete is the form action that deletes one item, confirmed by
// its key.
func (s *Server) uiMemoryDelete(w http.ResponseWriter, r *http.Request) error {
	mem, err := s.memory()
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return formError(err)
	}
	f := r.PostForm
	ns, err := queryNamespace(f, "ns")
	if err != nil {
		return err
	}
	key, err := queryKey(f)
	if err != nil {
		return err
	}
	if f.Get("confirm") != key {
		return badRequest("confirm", "confirm the item's key to delete it")
	}
	if err := mem.Delete(r.Context(), ns, key, 0); err != nil {
		return memoryError(err, map[string]string{"namespace": "ns"})
	}
	v := url.Values{"notice": {"item-deleted"}, "ns": {ns}, "key": {key}}
	seeOther(w, r, "/memory?"+v.Encode())
	return nil
}

// uiMemoryDeleteNamespace is the form action that deletes a namespace and
// those under it, confirmed by its name.
func (s *Server) uiMemoryDeleteNamespace(w http.ResponseWriter, r *http.Request) error {
	mem, err := s.memory()
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return formError(err)
	}
	prefix := r.PostForm.Get("prefix")
	if r.PostForm.Get("confirm") != prefix {
		return badRequest("confirm", "confirm the namespace's name to delete it")
	}
	n, err := s.deleteNamespace(r, mem, prefix)
	if err != nil {
		return err
	}
	v := url.Values{"notice": {"ns-deleted"}, "deleted": {prefix}, "n": {strconv.Itoa(n)}}
	seeOther(w, r, "/memory?"+v.Encode())
	return nil
}

// memoryNotice is the notice of the memory page after a delete: its
// names checked by longterm's rules, as a session ID is.
func memoryNotice(q url.Values) string {
	switch q.Get("notice") {
	case "item-deleted":
		ns, key := q.Get("ns"), q.Get("key")
		if longterm.ValidateNamespace(ns) != nil || longterm.ValidateKey(key) != nil {
			return "Deleted."
		}
		return "Deleted " + key + " of " + ns + "."
	case "ns-deleted":
		p := q.Get("deleted")
		n, err := strconv.Atoi(q.Get("n"))
		if longterm.ValidateNamespace(p) != nil || err != nil || n < 0 {
			return "Deleted."
		}
		items := " items"
		if n == 1 {
			items = " item"
		}
		return "Deleted namespace " + p + " and those under it: " + strconv.Itoa(n) + items + "."
	}
	return ""
}
