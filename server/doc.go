// Package server serves a store's sessions over HTTP: a web inspector for
// people and a JSON API for programs in any language. `cairn serve` runs
// it; a Go program can mount it in its own server.
//
// # Quick start
//
//	srv, err := server.New(server.Config{
//		Store:  store,                       // any cairn.Store
//		Tokens: []string{server.NewToken()}, // every request needs one
//	})
//	if err != nil {
//		return err
//	}
//	defer srv.Close(context.Background())
//	fmt.Println("open", srv.LoginURL("http://127.0.0.1:7420"))
//	return http.ListenAndServe("127.0.0.1:7420", srv)
//
// # The API
//
// The routes under /api are described by the OpenAPI document served at
// /api/openapi.json (and checked against the handlers by this package's
// tests). They carry the store contract: list sessions with the store's
// cursor, create one, read its events after a seq, stream them as
// server-sent events resumable with Last-Event-ID, append events with an
// expected seq (409 with the current seq on a conflict, 400 naming the
// field of a bad event), the state at any seq, approve or deny a pending
// tool call, resume a run, fork, delete, export and import. With
// Config.Memory, the routes under /api/memory serve long-term memory:
// namespaces, items by prefix and label, get, put with an expected
// version (409 on a conflict), delete, namespace delete and search; a
// server without it answers them 404 (code no_memory). Errors are
// {"error": {"code", "message", "field", "last_seq", "hint"}}.
//
// # The inspector
//
// /sessions lists the sessions, newest first, with filters, search and
// paging; the first page follows the store. /sessions/{id} shows a
// session's timeline, grouped by run and step, a page of PageEvents
// events at a time, next to the state after any seq (the time-travel
// slider); a running session's page shows new events as they are saved.
// Its actions (approve or deny, resume, fork, delete, export, import) ask
// for confirmation. /memory, with Config.Memory, browses and searches
// long-term memory, links each item to the session event it came from,
// and deletes an item or a namespace behind a confirmation. /fleet charts
// the runs that started in a window by outcome, with their model calls by
// model and their tools by failures, each mark a link to the runs behind
// it (GET /api/fleet); /workers shows each queue by state, the lease
// holders, and the sessions queued or under way (GET /api/workers). The
// pages are Go templates with one style sheet and one script, embedded:
// they work without the script, and without a build step.
//
// # Safety
//
// Every request needs a token but the login page and the static files,
// which are the same for every install: a program sends Authorization:
// Bearer TOKEN, a browser signs in once (LoginURL's one-time link, or the
// token pasted into /login) and gets a cookie. New refuses a token that
// CheckToken finds short or easy to guess. After the sign-in the browser
// goes back to the page it asked for only when that is a plain path of
// this server; every redirect is checked so. Form actions need the
// page's CSRF token and a same-site Origin. With ReadOnly every route that
// changes the store answers 403. Request bodies are bounded
// (MaxBodyBytes, MaxImportBytes) and decoded strictly: a key given twice,
// at any depth, or unknown is a 400 naming it. Every session ID is checked
// with cairn.ValidateID before any store call; AllowedHosts refuses
// requests sent to another host name (DNS rebinding). The server sets a
// strict Content-Security-Policy; it does not serve TLS itself.
package server
