package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/cairnhq/cairn"
)

func inputWithin() {
	needArgs(2, "usage: inputwithin FILE N")
	limit, err := strconv.ParseInt(os.Args[2], 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "inputwithin:", err)
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	exitIf(err, "inputwithin:")
	m, err := cairn.LoadJSON(data)
	exitIf(err, "inputwithin:")
	var users, responses, compactions, over int
	var largest int64
	for _, e := range m.Events() {
		v, err := e.Decode()
		exitIf(err, "inputwithin:")
		switch d := v.(type) {
		case *cairn.MessageUser:
			users++
		case *cairn.MemoryCompacted:
			compactions++
		case *cairn.ModelResponse:
			responses++
			largest = max(largest, d.Usage.InputTokens)
			if d.Usage.InputTokens > limit {
				over++
				fmt.Fprintf(os.Stderr, "inputwithin: the model.response at seq %d has %d input tokens, over %d\n", e.Seq, d.Usage.InputTokens, limit)
			}
		}
	}
	fmt.Printf("users %d\nresponses %d\ncompactions %d\nlargest input %d\n", users, responses, compactions, largest)
	if over > 0 || responses == 0 {
		os.Exit(1)
	}
	os.Exit(0)
}
