package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMemory_SessionNamespace: on the backends that keep one long-term
// memory per session namespace, --namespace divides the memory as it
// divides the sessions: what is put under one namespace is neither read
// nor found nor deleted under another (on SQLite and file stores, the
// default namespace and another of one store).
func TestMemory_SessionNamespace(t *testing.T) {
	for _, backend := range []string{"sqlite", "file", "postgres", "redis", "mongodb"} {
		t.Run(backend, func(t *testing.T) {
			c := newCLIEnv(t)
			a := testStore(t, c, backend, "mns_")
			b := testStore(t, c, backend, "mns_")
			if backend == "sqlite" || backend == "file" { // one store: the default namespace, and another
				b = append(b, "--namespace", "mns_b")
			}
			t.Cleanup(func() {
				for _, st := range [][]string{a, b} {
					c.run(append(st, "memory", "delete", "users", "--yes")...)
				}
			})
			c.must(append(a, "memory", "put", "users/ada", "food", `"figs"`, "--text", "Ada likes figs")...)
			c.must(append(b, "memory", "put", "users/ada", "pet", `"otter"`)...)
			if out := c.must(append(a, "memory", "get", "users/ada", "food")...); !strings.Contains(out, "figs") {
				t.Fatalf("get in the namespace it was put in: %s", out)
			}
			if out, errOut, code := c.run(append(b, "memory", "get", "users/ada", "food")...); code != 1 || !strings.Contains(errOut, "not found") {
				t.Errorf("get under another namespace: exit %d\n%s%s; want not found", code, out, errOut)
			}
			var found []json.RawMessage
			if err := json.Unmarshal([]byte(c.must(append(b, "--json", "memory", "search", "figs")...)), &found); err != nil || len(found) != 0 {
				t.Errorf("search under another namespace found %d (%v); want none", len(found), err)
			}
			c.must(append(b, "memory", "delete", "users", "--yes")...)
			if out := c.must(append(a, "memory", "get", "users/ada", "food")...); !strings.Contains(out, "figs") {
				t.Errorf("a delete under another namespace took the item: %s", out)
			}
		})
	}
}

// TestMemory_BadInputHints: an argument that breaks a rule exits 2 with a
// hint that gives the rule broken: a namespace's, or what a search needs.
func TestMemory_BadInputHints(t *testing.T) {
	c := newCLIEnv(t)
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"memory", "put", "users//ada", "k", "1"}, "slash paths of segments"},
		{[]string{"memory", "search", "budget", "--ns", "users/"}, "slash paths of segments"},
		{[]string{"memory", "search", ""}, "words to look for"},
	} {
		out, errOut, code := c.run(tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.hint) {
			t.Errorf("cairn %s: exit %d\n%s%s\nwant exit 2 and a hint with %q", strings.Join(tc.args, " "), code, out, errOut, tc.hint)
		}
	}
}
