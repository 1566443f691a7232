package cairngenkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	cairngenkit "github.com/cairnhq/cairn/contrib/genkit"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"
	"github.com/firebase/genkit/go/core/x/session"
	"github.com/firebase/genkit/go/genkit"
)

// The flow test runs the test binary itself as the process that runs the
// flow: with childEnv set, TestMain runs the flow once and exits.
const childEnv = "CAIRNGENKIT_FLOW_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := runChild(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// convo is the flow's session state: the conversation so far.
type convo struct {
	Turns    int           `json:"turns"`
	Messages []*ai.Message `json:"messages"`
}

type chatIn struct {
	Session string `json:"session"`
	Message string `json:"message"`
}

type chatOut struct {
	Turns int      `json:"turns"`
	Reply string   `json:"reply"`
	Said  []string `json:"said"` // the user's messages, every turn
}

// defineChat defines, on g, a model of the test's own (it answers with
// the number of user messages it was given and the last one) and the flow
// "chat", which keeps the conversation in a Genkit session of store.
func defineChat(g *genkit.Genkit, store *cairngenkit.Store[convo]) *core.Flow[chatIn, chatOut, struct{}] {
	model := genkit.DefineModel(g, "test/echo", &ai.ModelOptions{Supports: &ai.ModelSupports{Multiturn: true}},
		func(ctx context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			var users []string
			for _, m := range req.Messages {
				if m.Role == ai.RoleUser {
					users = append(users, m.Text())
				}
			}
			if len(users) == 0 {
				return nil, errors.New("no user message")
			}
			text := fmt.Sprintf("echo #%d: %s", len(users), users[len(users)-1])
			return &ai.ModelResponse{Request: req, Message: ai.NewModelTextMessage(text), FinishReason: ai.FinishReasonStop}, nil
		})
	return genkit.DefineFlow(g, "chat", func(ctx context.Context, in chatIn) (chatOut, error) {
		st := store.View() // this run's own view: a concurrent run's save is a conflict
		sess, err := session.Load(ctx, st, in.Session)
		var nf *session.NotFoundError
		if errors.As(err, &nf) {
			sess, err = session.New(ctx, session.WithID[convo](in.Session), session.WithStore[convo](st))
		}
		if err != nil {
			return chatOut{}, err
		}
		c := sess.State()
		msgs := append(c.Messages, ai.NewUserTextMessage(in.Message))
		resp, err := genkit.Generate(ctx, g, ai.WithModel(model), ai.WithMessages(msgs...))
		if err != nil {
			return chatOut{}, err
		}
		c.Messages, c.Turns = append(msgs, resp.Message), c.Turns+1
		if err := sess.UpdateState(ctx, c); err != nil {
			return chatOut{}, err
		}
		out := chatOut{Turns: c.Turns, Reply: resp.Text()}
		for _, m := range c.Messages {
			if m.Role == ai.RoleUser {
				out.Said = append(out.Said, m.Text())
			}
		}
		return out, nil
	})
}

// runChild runs the flow once on the store and session the environment
// names, and prints its output as JSON.
func runChild() error {
	ctx := context.Background()
	cs, err := cairn.Open(ctx, os.Getenv("CAIRNGENKIT_URL"), cairn.StoreOptions{Namespace: os.Getenv("CAIRNGENKIT_NS")})
	if err != nil {
		return err
	}
	defer cs.Close()
	g := genkit.Init(ctx)
	flow := defineChat(g, cairngenkit.NewStore[convo](cs, cairngenkit.StoreOptions{}))
	out, err := flow.Run(ctx, chatIn{Session: os.Getenv("CAIRNGENKIT_SESSION"), Message: os.Getenv("CAIRNGENKIT_MESSAGE")})
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// TestFlow_Processes runs a real Genkit flow in two processes, one after
// the other, on one session: the second sees the first's conversation.
func TestFlow_Processes(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	forEach(t, func(t *testing.T, b backend) {
		run := func(msg string) chatOut {
			t.Helper()
			cmd := exec.CommandContext(t.Context(), exe)
			cmd.Env = append(os.Environ(), childEnv+"=1", "CAIRNGENKIT_URL="+b.url, "CAIRNGENKIT_NS="+b.ns,
				"CAIRNGENKIT_SESSION=chat1", "CAIRNGENKIT_MESSAGE="+msg)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			raw, err := cmd.Output()
			if err != nil {
				t.Fatalf("flow process with %q: %v\n%s", msg, err, stderr.String())
			}
			var out chatOut
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatalf("flow output %q: %v", raw, err)
			}
			return out
		}
		first := run("hello")
		if first.Turns != 1 || first.Reply != "echo #1: hello" {
			t.Fatalf("first process = %+v; want turn 1, reply \"echo #1: hello\"", first)
		}
		second := run("again")
		if second.Turns != 2 || second.Reply != "echo #2: again" || strings.Join(second.Said, ",") != "hello,again" {
			t.Fatalf("second process = %+v; want turn 2, the model given both messages", second)
		}
		// The session is an ordinary cairn session: one save per turn,
		// the conversation in its variable.
		cs := b.open(t)
		rec, err := cs.Load(t.Context(), "chat1", 0)
		if err != nil {
			t.Fatal(err)
		}
		st := mustFold(t, rec.Events)
		var c convo
		if ok, err := st.Var(cairngenkit.DefaultKey, &c); !ok || err != nil || c.Turns != 2 || len(c.Messages) != 4 {
			t.Fatalf("stored state = %+v (%v, %v); want 2 turns, 4 messages", c, ok, err)
		}
		if len(rec.Events) != 3 { // New, then one save per turn
			t.Errorf("the session holds %d events; want 3", len(rec.Events))
		}
	})
}
