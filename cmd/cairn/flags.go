package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// onceFlags makes every flag of root and of its commands that takes one
// value refuse a second one, so that `--store A --store B` is a usage
// error naming both values rather than B taken silently. It wraps each
// flag's value as it is defined, whichever command defines it; call it
// once the commands are added. Flags that take a list (`--label K=V`
// given again adds a label: a slice or array value) and counters stay
// repeatable. A switch (a flag that may be given without a value, such as
// --json) given twice the same way is the same switch; given two values
// (--json=true --json=false, chat's --resume=A --resume=B), it is refused
// as any other flag.
func onceFlags(root *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		if _, done := f.Value.(*onceValue); done || repeatable(f.Value) {
			return
		}
		f.Value = &onceValue{Value: f.Value, flag: f}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.PersistentFlags().VisitAll(wrap)
		c.Flags().VisitAll(wrap)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// repeatable reports whether a flag value gathers every value it is given.
func repeatable(v pflag.Value) bool {
	if _, ok := v.(pflag.SliceValue); ok {
		return true
	}
	t := v.Type()
	return t == "count" || strings.HasSuffix(t, "Slice") || strings.HasSuffix(t, "Array") || strings.HasPrefix(t, "stringTo")
}

// onceValue is a flag's value that may be set once on a command line.
type onceValue struct {
	pflag.Value
	flag  *pflag.Flag
	given []string // what the command line gave, in order
}

// Set sets the value the first time, and refuses a second value with a
// *repeatedFlagError; a switch set again to the value it was given is
// let be.
func (v *onceValue) Set(s string) error {
	if len(v.given) > 0 {
		if v.flag.NoOptDefVal != "" && s == v.given[0] {
			return nil
		}
		return &repeatedFlagError{flag: v.flag, values: []string{v.given[0], s}}
	}
	v.given = append(v.given, s)
	return v.Value.Set(s)
}

// repeatedFlagError is a flag that takes one value given two.
type repeatedFlagError struct {
	flag   *pflag.Flag
	values []string
}

func (e *repeatedFlagError) Error() string {
	return fmt.Sprintf("%s is given twice (%q, then %q); it takes one value", flagName(e.flag), e.values[0], e.values[1])
}

// hint says what to do instead.
func (e *repeatedFlagError) hint() string {
	return "give " + flagName(e.flag) + " once; a flag that takes one value is never overridden by a second one"
}

// flagName is how a person wrote the flag: --name, or --name (-n).
func flagName(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return "--" + f.Name + " (-" + f.Shorthand + ")"
	}
	return "--" + f.Name
}
