package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cairnhq/cairn/internal/cli"
)

// TestFlags_OnceEach parses, for every command and every flag it takes
// (its own and those it inherits), a command line that gives the flag two
// values: a flag that takes one value is refused as a usage error naming
// it and both values, before the command runs; a flag that takes a list
// keeps both. So a flag added to any command later is covered too.
func TestFlags_OnceEach(t *testing.T) {
	values := map[string][2]string{
		"string": {"a", "b"}, "int": {"1", "2"}, "int64": {"1", "2"}, "duration": {"1s", "2s"},
		"bool": {"true", "false"}, "stringSlice": {"a", "b"}, "stringArray": {"a", "b"},
	}
	var walk func(c *cobra.Command, path []string)
	checked, tried := 0, 0
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			walk(sub, append(path[:len(path):len(path)], sub.Name()))
		}
		if !c.Runnable() {
			return
		}
		each := func(f *pflag.Flag) {
			if f.Name != "help" {
				try(t, path, f, values)
				tried++
			}
		}
		c.InheritedFlags().VisitAll(each)
		c.LocalFlags().VisitAll(each)
		checked++
	}
	walk(newRoot(testApp()), nil)
	if checked < 20 || tried < 60 {
		t.Errorf("checked %d commands and %d flags; the tree has more", checked, tried)
	}
}

// testApp is an App whose streams are buffers.
func testApp() *cli.App {
	var out, errb bytes.Buffer
	return &cli.App{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
}

// try gives flag f two values on the command line of the command at path.
func try(t *testing.T, path []string, f *pflag.Flag, values map[string][2]string) {
	t.Helper()
	v, ok := values[f.Value.Type()]
	if !ok {
		t.Errorf("%s --%s: a flag of type %s; add it to the test", strings.Join(path, " "), f.Name, f.Value.Type())
		return
	}
	root := newRoot(testApp())
	ran := false
	cmd, _, err := root.Find(path)
	if err != nil {
		t.Fatal(err)
	}
	cmd.RunE = func(*cobra.Command, []string) error { ran = true; return nil }
	cmd.Run = nil
	root.PersistentPreRunE = nil
	cmd.Args = nil
	args := append(path[:len(path):len(path)], "--"+f.Name+"="+v[0], "--"+f.Name+"="+v[1])
	root.SetArgs(args)
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	err = root.Execute()
	name := "cairn " + strings.Join(args, " ")
	if typ := f.Value.Type(); typ == "stringSlice" || typ == "stringArray" {
		if err != nil || !ran {
			t.Errorf("%s: %v; want a list flag to take both", name, err)
		}
		return
	}
	var ce *cli.Error
	if !errors.As(err, &ce) || ce.Code != cli.ExitUsage || ran {
		t.Errorf("%s: ran %v, error %v; want a usage error before the command runs", name, ran, err)
		return
	}
	for _, w := range []string{"--" + f.Name, `"` + v[0] + `"`, `"` + v[1] + `"`, "given twice"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not say %s", name, err, w)
		}
	}
	if !strings.Contains(ce.Hint, "--"+f.Name) {
		t.Errorf("%s: hint %q does not name the flag", name, ce.Hint)
	}
}
