package providertest

import (
	"fmt"
	"net/http"
)

// Event is one server-sent event: a data line, after an event line when
// Name is set.
type Event struct{ Name, Data string }

// WriteEvents answers with a stream of server-sent events, flushing after
// each.
func WriteEvents(w http.ResponseWriter, events ...Event) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for _, e := range events {
		if e.Name != "" {
			fmt.Fprintf(w, "event: %s\n", e.Name)
		}
		fmt.Fprintf(w, "data: %s\n\n", e.Data)
		if f != nil {
			f.Flush()
		}
	}
}

// WriteError answers with status, the headers in header and the JSON
// document body.
func WriteError(w http.ResponseWriter, status int, header map[string]string, body string) {
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}
