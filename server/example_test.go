package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/server"
	"github.com/cairnhq/cairn/store/memory"
)

// A server over a store, and a program appending to a session with the
// seq it expects.
func ExampleNew() {
	store, _ := memory.New(cairn.StoreOptions{})
	defer store.Close()
	token := server.NewToken()
	srv, err := server.New(server.Config{Store: store, Tokens: []string{token}})
	if err != nil {
		panic(err)
	}
	defer srv.Close(context.Background())
	ts := httptest.NewServer(srv)
	defer ts.Close()

	post := func(path, body string) {
		req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		var v struct {
			LastSeq *int64 `json:"last_seq"`
			Error   *struct {
				Code    string `json:"code"`
				LastSeq int64  `json:"last_seq"`
			} `json:"error"`
		}
		json.NewDecoder(res.Body).Decode(&v)
		switch {
		case v.Error != nil:
			fmt.Println(res.StatusCode, v.Error.Code, "at seq", v.Error.LastSeq)
		case v.LastSeq != nil:
			fmt.Println(res.StatusCode, "last seq", *v.LastSeq)
		default:
			fmt.Println(res.StatusCode)
		}
	}
	post("/api/sessions", `{"id":"demo"}`)
	event := `{"kind":"message.user","at":"2026-12-01T10:00:00Z","data":{"parts":[{"type":"text","text":"hello"}]}}`
	post("/api/sessions/demo/events", `{"expect_seq":0,"events":[`+event+`]}`)
	post("/api/sessions/demo/events", `{"expect_seq":0,"events":[`+event+`]}`) // a retry: already done
	post("/api/sessions/demo/events", `{"expect_seq":0,"events":[{"kind":"message.system","data":{"text":"x"}}]}`)
	// Output:
	// 201
	// 200 last seq 1
	// 200 last seq 1
	// 409 conflict at seq 1
}
