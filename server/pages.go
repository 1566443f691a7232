package server

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

//go:embed ui/templates/*.html ui/static/*
var uiFS embed.FS

// pages are the inspector's pages: Go templates and two static files, a
// style sheet and a script, all embedded (uiFS): nothing to build, nothing
// fetched from elsewhere. Every page works without the script (forms and
// links); the script adds live updates, the time-travel slider and keys.
type pages struct {
	tmpl   *template.Template
	assets map[string]asset
}

type asset struct {
	data []byte
	typ  string
	etag string
}

func loadPages() (*pages, error) {
	t, err := template.New("").Funcs(funcs).Funcs(fleetFuncs).ParseFS(uiFS, "ui/templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("server: templates: %w", err)
	}
	p := &pages{tmpl: t, assets: map[string]asset{}}
	files, err := fs.Glob(uiFS, "ui/static/*")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		data, err := uiFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		p.assets[path.Base(f)] = asset{data: data, typ: mime.TypeByExtension(path.Ext(f)), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return p, nil
}

// assetVersion changes with the static files, for their URLs.
func (p *pages) assetVersion() string {
	h := sha256.New()
	for _, name := range []string{"app.css", "app.js"} {
		h.Write([]byte(p.assets[name].etag))
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}

var funcs = template.FuncMap{
	"marked":   marked,
	"eventURL": eventURL,
	"clip": func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		return strings.ToValidUTF8(s[:n], "") + "…"
	},
	"long": func(s string, n int) bool { return len(s) > n },
	"iso":  func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	},
	"clock":  func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
	"pretty": prettyJSON,
	"num":    thousands,
	"add":    func(a, b int64) int64 { return a + b },
	"i64":    func(n int) int64 { return int64(n) },
	"ms": func(n int64) string {
		if n >= 1000 {
			return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + " s"
		}
		return strconv.FormatInt(n, 10) + " ms"
	},
	"interrupt": interruptText,
	"nsURL":     namespaceURL,
}

// prettyJSON indents raw JSON for reading; anything else is shown as is.
func prettyJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 || len(s) <= 3 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// base is what every page's layout needs.
type base struct {
	Title    string
	Page     string
	CSRF     string
	ReadOnly bool
	CanWrite bool
	Agent    bool
	Memory   bool // the server has long-term memory: the header links its page
	Version  string
	Notice   string
}

func (s *Server) base(r *http.Request, title, page string) base {
	b := base{Title: title, Page: page, ReadOnly: s.cfg.ReadOnly, CanWrite: !s.cfg.ReadOnly,
		Agent: s.cfg.Agent != nil && !s.cfg.ReadOnly, Memory: s.cfg.Memory != nil, Version: s.pages.assetVersion(), Notice: notice(r)}
	if ui, ok := r.Context().Value(uiKey{}).(*uiSession); ok {
		b.CSRF = ui.CSRF
	}
	return b
}

// notice is the message a page shows after an action redirected to it:
// chosen from a fixed set by code, with an ID checked like any other.
func notice(r *http.Request) string {
	q := r.URL.Query()
	id := q.Get("id")
	if validID("id", id) != nil {
		id = ""
	}
	switch q.Get("notice") {
	case "deleted":
		return "Deleted session " + id + "."
	case "forked":
		return "This session is a fork of " + id + "."
	case "imported":
		return "Imported."
	case "decided":
		return "Decision recorded."
	case "resumed":
		return "The run goes on; new events appear below as they are saved."
	}
	return memoryNotice(q)
}

// render writes template name with data as a page.
func (s *Server) render(w http.ResponseWriter, status int, name string, data any) error {
	var buf bytes.Buffer
	if err := s.pages.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

type errorData struct {
	base
	Err  *apiError
	Back string
}

func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, e *apiError) {
	back := "/sessions"
	if strings.HasPrefix(r.URL.Path, "/memory") && s.cfg.Memory != nil {
		back = "/memory"
	}
	if id := r.PathValue("id"); id != "" && validID("id", id) == nil {
		back = "/sessions/" + id
	}
	d := errorData{base: s.base(r, "Error", "error"), Err: e, Back: back}
	if err := s.render(w, e.Status, "error.html", d); err != nil {
		http.Error(w, e.Message, e.Status)
	}
}

func (s *Server) uiAsset(w http.ResponseWriter, r *http.Request) error {
	a, ok := s.pages.assets[r.PathValue("file")]
	if !ok {
		return &apiError{Status: http.StatusNotFound, Code: "no_route", Message: "no such file"}
	}
	h := w.Header()
	h.Set("Content-Type", a.typ)
	h.Set("ETag", a.etag)
	h.Set("Cache-Control", "private, max-age=3600")
	if r.Header.Get("If-None-Match") == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	_, err := w.Write(a.data)
	return err
}
