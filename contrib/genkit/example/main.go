// Command example is a Genkit flow whose session state persists across
// runs in a cairn store: each run adds the message to the conversation
// that the session holds, asks a model for a reply, saves the
// conversation, and prints it.
//
//	cd contrib/genkit
//	go run ./example --session demo "hello"
//	go run ./example --session demo "what did I say?"   # sees "hello"
//	go run ./example --store postgres://localhost/app --session demo "hi"
//
// The store defaults to the SQLite file .cairn/cairn.db in the working
// directory, the cairn command's default too, so `cairn sessions show
// demo` run there shows the saved state (--store URL for another store).
// The model is a small one of the example's own, defined through Genkit's
// API, so that the example runs without an API key: it answers with what
// it was told so far. It exits 0 when the turn is saved, 1 on an error (a
// conflict included: another run saved the session first).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/cairnhq/cairn"
	cairngenkit "github.com/cairnhq/cairn/contrib/genkit"
	_ "github.com/cairnhq/cairn/store/all" // every store's URL scheme
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"
	"github.com/firebase/genkit/go/core/x/session"
	"github.com/firebase/genkit/go/genkit"
)

// DefaultStore is the store when --store is not given.
const DefaultStore = "sqlite:///.cairn/cairn.db"

// Chat is the session's state.
type Chat struct {
	Turns    int           `json:"turns"`
	Messages []*ai.Message `json:"messages"`
}

// Input is the flow's input.
type Input struct {
	Session string `json:"session"`
	Message string `json:"message"`
}

// Output is the flow's output, as --json prints it.
type Output struct {
	Session string   `json:"session"`
	Turn    int      `json:"turn"`
	Reply   string   `json:"reply"`
	History []string `json:"history"` // "user: …" and "model: …", oldest first
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run() error {
	storeURL := flag.String("store", DefaultStore, "store URL (sqlite:, file://, postgres://, redis://, mongodb://, memory:)")
	namespace := flag.String("namespace", "", "store namespace (default: the store's default)")
	id := flag.String("session", "genkit-demo", "session ID")
	asJSON := flag.Bool("json", false, "print the turn as JSON")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: example [--store URL] [--namespace NS] [--session ID] [--json] \"message\"\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || strings.TrimSpace(flag.Arg(0)) == "" {
		flag.Usage()
		return errors.New("give one message, quoted")
	}

	ctx := context.Background()
	cs, err := cairn.Open(ctx, *storeURL, cairn.StoreOptions{Namespace: *namespace})
	if err != nil {
		return err
	}
	defer cs.Close()

	g := genkit.Init(ctx)
	flow := defineChat(g, cairngenkit.NewStore[Chat](cs, cairngenkit.StoreOptions{}))
	out, err := flow.Run(ctx, Input{Session: *id, Message: flag.Arg(0)})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(out)
	}
	fmt.Printf("session %s, turn %d\n", out.Session, out.Turn)
	for _, line := range out.History {
		fmt.Println("  " + line)
	}
	return nil
}

// defineChat defines the example's model and its flow on g.
func defineChat(g *genkit.Genkit, store *cairngenkit.Store[Chat]) *core.Flow[Input, Output, struct{}] {
	model := genkit.DefineModel(g, "example/recall", &ai.ModelOptions{Label: "recall", Supports: &ai.ModelSupports{Multiturn: true}}, recall)
	return genkit.DefineFlow(g, "chat", func(ctx context.Context, in Input) (Output, error) {
		st := store.View() // checks this run's save against any other run's
		sess, err := session.Load(ctx, st, in.Session)
		var nf *session.NotFoundError
		if errors.As(err, &nf) {
			sess, err = session.New(ctx, session.WithID[Chat](in.Session), session.WithStore[Chat](st))
		}
		if err != nil {
			return Output{}, err
		}
		c := sess.State()
		msgs := append(c.Messages, ai.NewUserTextMessage(in.Message))
		resp, err := genkit.Generate(ctx, g, ai.WithModel(model), ai.WithMessages(msgs...))
		if err != nil {
			return Output{}, err
		}
		c.Messages, c.Turns = append(msgs, resp.Message), c.Turns+1
		if err := sess.UpdateState(ctx, c); err != nil {
			return Output{}, err
		}
		out := Output{Session: in.Session, Turn: c.Turns, Reply: resp.Text()}
		for _, m := range c.Messages {
			out.History = append(out.History, fmt.Sprintf("%s: %s", m.Role, m.Text()))
		}
		return out, nil
	})
}

// recall is the example's model: it answers with how many messages it has
// been told and what they were.
func recall(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
	var said []string
	for _, m := range req.Messages {
		if m.Role == ai.RoleUser {
			said = append(said, fmt.Sprintf("%q", m.Text()))
		}
	}
	if len(said) == 0 {
		return nil, errors.New("recall: no user message")
	}
	text := fmt.Sprintf("you have told me %d thing(s): %s", len(said), strings.Join(said, ", "))
	return &ai.ModelResponse{Request: req, Message: ai.NewModelTextMessage(text), FinishReason: ai.FinishReasonStop}, nil
}
