package main

import (
	"errors"
	"strings"

	"github.com/cairnhq/cairn/internal/cli"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// suggestFlag returns "did you mean --NAME?" for an unknown long flag that is
// close to one the command takes (an edit or two away, or a prefix of it),
// or "" when none is.
func suggestFlag(c *cobra.Command, err error) string {
	msg := err.Error()
	const prefix = "unknown flag: --"
	if !strings.HasPrefix(msg, prefix) {
		return ""
	}
	typed, _, _ := strings.Cut(strings.TrimPrefix(msg, prefix), "=")
	var names []string
	visit := func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	}
	c.Flags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	if best := closest(typed, names); best != "" {
		return "did you mean --" + best + "?"
	}
	return ""
}

// closest returns the name nearest to typed: the one fewest edits away,
// within two (one for names of up to four letters), else the only name that
// typed begins; "" when none is near enough.
func closest(typed string, names []string) string {
	limit := 2
	if len(typed) <= 4 {
		limit = 1
	}
	best, bestDist := "", limit+1
	var prefixed []string
	for _, n := range names {
		if d := editDistance(typed, n); d < bestDist {
			best, bestDist = n, d
		}
		if typed != "" && strings.HasPrefix(n, typed) {
			prefixed = append(prefixed, n)
		}
	}
	if best == "" && len(prefixed) == 1 {
		best = prefixed[0]
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// suggestCommand returns "did you mean `PATH NAME`?" for an unknown command
// typed under parent that is close to one of its commands (or aliases), or
// "" when none is.
func suggestCommand(parent *cobra.Command, typed string) string {
	var names []string
	byName := map[string]*cobra.Command{}
	for _, c := range parent.Commands() {
		if !c.IsAvailableCommand() {
			continue
		}
		for _, n := range append([]string{c.Name()}, c.Aliases...) {
			names = append(names, n)
			byName[n] = c
		}
	}
	if best := closest(typed, names); best != "" {
		return "did you mean `" + byName[best].CommandPath() + "`?"
	}
	return ""
}

// unknownCommand returns the word of cobra's `unknown command "WORD" for
// "PATH"` error, and false for any other error.
func unknownCommand(err error) (string, bool) {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	rest, ok := strings.CutPrefix(msg, `unknown command "`)
	if !ok {
		return "", false
	}
	word, _, ok := strings.Cut(rest, `"`)
	return word, ok
}

// usageError is a usage error for cobra's refusal err of a command line
// under c: its first line (cobra adds its own suggestions below), with a
// hint that names the command's help and, for a mistyped command or flag,
// the one meant.
func usageError(c *cobra.Command, err error) error {
	hint := "see `" + c.CommandPath() + " --help`"
	s := suggestFlag(c, err)
	if word, ok := unknownCommand(err); ok {
		s = suggestCommand(c, word)
		first, _, _ := strings.Cut(err.Error(), "\n")
		err = errors.New(first)
	}
	if s != "" {
		hint = s + " (" + hint + ")"
	}
	return &cli.Error{Err: err, Hint: hint, Code: cli.ExitUsage}
}

// unknownFlagFirst finds the mistyped flag behind an "unknown command" error:
// cobra takes the word after an unknown --flag for its value, so that
// `cairn --jsn sessions list` is refused as the unknown command "list".
// When args hold a long flag no command knows and, without it, name a
// command, that command and the flag's own error are returned; else nil.
func unknownFlagFirst(root *cobra.Command, args []string, err error) (*cobra.Command, error) {
	if _, ok := unknownCommand(err); !ok {
		return nil, nil
	}
	for i, a := range args {
		if a == "--" {
			break
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok || name == "" {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		rest := append(append([]string{}, args[:i]...), args[i+1:]...)
		c, _, ferr := root.Find(rest)
		if ferr != nil || c == nil || c.Flags().Lookup(name) != nil || c.InheritedFlags().Lookup(name) != nil {
			continue
		}
		return c, errors.New("unknown flag: --" + name)
	}
	return nil, nil
}
