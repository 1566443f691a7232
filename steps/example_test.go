package steps_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/steps"
	"github.com/cairnhq/cairn/store/memory"
)

// A loop of your own, made durable: each step's result is recorded as it
// happens, and a re-run of the same loop on the same session returns the
// recorded results instead of running the steps again.
func ExampleRun() {
	ctx := context.Background()
	store, _ := memory.New(cairn.StoreOptions{}) // or sqlite, postgres, redis, mongodb, file
	defer store.Close()

	loop := func(process string) {
		s, err := steps.Open(ctx, store, "report-42", steps.Options{})
		if err != nil {
			panic(err)
		}
		defer s.Close()
		for _, city := range []string{"Lisbon", "Porto"} {
			temp, err := steps.Run(ctx, s, "weather "+city, func(ctx context.Context) (int, error) {
				fmt.Printf("  %s asks the weather service about %s\n", process, city)
				return len(city) * 3, nil // a call to a service, a model, a database…
			})
			if err != nil {
				panic(err)
			}
			fmt.Printf("  %s: %s is %d°C\n", process, city, temp)
		}
		if err := s.Finish(ctx, "report ready"); err != nil {
			panic(err)
		}
	}
	fmt.Println("first run:")
	loop("process 1")
	fmt.Println("the same loop again, in another process:")
	loop("process 2")
	// Output:
	// first run:
	//   process 1 asks the weather service about Lisbon
	//   process 1: Lisbon is 18°C
	//   process 1 asks the weather service about Porto
	//   process 1: Porto is 15°C
	// the same loop again, in another process:
	//   process 2: Lisbon is 18°C
	//   process 2: Porto is 15°C
}

// A step whose effect must not happen twice records its start before it
// runs. When a process stopped after the start and before the result, the
// next run does not run the step again: it reports the outcome as unknown
// and the caller decides, here by recording what it found out.
func ExampleOutcomeUnknownError() {
	ctx := context.Background()
	store, _ := memory.New(cairn.StoreOptions{})
	defer store.Close()
	charge := func(ctx context.Context) (string, error) {
		fmt.Println("charging the card")
		return "charged", nil
	}

	// The first process stops while the step runs (here, its context
	// ends; a kill -9 leaves the session the same way).
	s, _ := steps.Open(ctx, store, "order-7", steps.Options{})
	stopped, stop := context.WithCancel(ctx)
	_, err := steps.Run(stopped, s, "charge", func(ctx context.Context) (string, error) {
		stop()
		return "", ctx.Err()
	}, steps.NotIdempotent())
	fmt.Println("first process:", err)

	// The next process does not charge again.
	s, _ = steps.Open(ctx, store, "order-7", steps.Options{})
	_, err = steps.Run(ctx, s, "charge", charge, steps.NotIdempotent())
	var u *steps.OutcomeUnknownError
	if errors.As(err, &u) {
		fmt.Printf("step %d %q: outcome unknown\n", u.Step, u.Name)
		// Ask the payment provider what happened, and record it.
		if err := s.Resolve(ctx, u.Name, "not charged (the provider has no such payment)"); err != nil {
			panic(err)
		}
	}

	// Every later run returns the recorded outcome.
	s, _ = steps.Open(ctx, store, "order-7", steps.Options{})
	v, err := steps.Run(ctx, s, "charge", charge, steps.NotIdempotent())
	fmt.Println(v, err)
	// Output:
	// first process: context canceled
	// step 1 "charge": outcome unknown
	// not charged (the provider has no such payment) <nil>
}

// A model loop: each model call and each tool call it asks for is a step,
// recorded as the model.response and tool.result events that cairn's own
// agent writes, so `cairn sessions show --transcript`, the inspector and
// the export formats show the conversation.
func ExampleModel() {
	ctx := context.Background()
	store, _ := memory.New(cairn.StoreOptions{})
	defer store.Close()
	s, _ := steps.Open(ctx, store, "chat-1", steps.Options{Name: "my-agent"})
	defer s.Close()

	_ = s.User(ctx, "How many letters in Lisbon?")
	for {
		resp, err := steps.Model(ctx, s, func(ctx context.Context) (cairn.ModelResponse, error) {
			// Call your model here with s.State().Messages.
			if len(s.State().Messages) == 1 {
				return cairn.ModelResponse{Model: "fake", ToolCalls: []cairn.ToolCall{
					{Name: "count", Args: []byte(`{"word":"Lisbon"}`)},
				}}, nil
			}
			return cairn.ModelResponse{Model: "fake", Text: "Lisbon has 6 letters."}, nil
		})
		if err != nil {
			panic(err)
		}
		if len(resp.ToolCalls) == 0 {
			_ = s.Finish(ctx, resp.Text)
			break
		}
		for _, call := range resp.ToolCalls {
			out, err := steps.Tool(ctx, s, call, func(ctx context.Context) (string, error) {
				return fmt.Sprint(len("Lisbon")), nil
			})
			if err != nil {
				out = err.Error() // the model sees a tool's error as its result
			}
			fmt.Printf("tool %s → %s\n", call.Name, out)
		}
	}
	for _, m := range s.State().Messages {
		text := m.Content
		for _, c := range m.ToolCalls {
			text += "→ " + c.Name + string(c.Args)
		}
		fmt.Printf("%s: %s\n", m.Role, text)
	}
	// Output:
	// tool count → 6
	// user: How many letters in Lisbon?
	// assistant: → count{"word":"Lisbon"}
	// tool: 6
	// assistant: Lisbon has 6 letters.
}

// Variables set before a step, or inside it with the step's context, are
// recorded with the step, in the same append. While a re-run replays, the
// loop reads each variable as the first run read it at that point.
func ExampleSession_Set() {
	ctx := context.Background()
	store, _ := memory.New(cairn.StoreOptions{})
	defer store.Close()
	loop := func() {
		s, _ := steps.Open(ctx, store, "counter", steps.Options{})
		defer s.Close()
		var seen []int
		for range 3 {
			var n int
			_, _ = s.Var("n", &n)
			_, _ = steps.Run(ctx, s, "tick", func(ctx context.Context) (int, error) {
				return n, s.Set(ctx, "n", n+1) // part of the step
			})
			seen = append(seen, n)
		}
		fmt.Println(seen)
	}
	loop()
	loop() // replayed: the same values, in order
	// Output:
	// [0 1 2]
	// [0 1 2]
}

// With Claim, a session is run by one process at a time: another process
// that claims it is refused while the lease lives, and once another holder
// has taken it over (Force), no write of the first one gets in.
func ExampleOptions_claim() {
	ctx := context.Background()
	store, _ := memory.New(cairn.StoreOptions{})
	defer store.Close()

	a, _ := steps.Open(ctx, store, "job-9", steps.Options{Claim: true, Holder: "worker-a"})
	defer a.Close()
	_, err := steps.Open(ctx, store, "job-9", steps.Options{Claim: true, Holder: "worker-b"})
	fmt.Println(errors.Is(err, cairn.ErrLeaseHeld), strings.Contains(err.Error(), "worker-a"))

	b, _ := steps.Open(ctx, store, "job-9", steps.Options{Claim: true, Holder: "worker-b", Force: true})
	defer b.Close()
	_, err = steps.Run(ctx, a, "work", func(context.Context) (int, error) { return 1, nil })
	fmt.Println(errors.Is(err, cairn.ErrLeaseLost))
	// Output:
	// true true
	// true
}
