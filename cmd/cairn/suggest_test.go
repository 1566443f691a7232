package main

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"session", "store", "model", "namespace", "json", "limit", "label"}
	for _, c := range []struct{ typed, want string }{
		{"sesion", "session"},
		{"sessoin", "session"},
		{"stor", "store"},
		{"modle", "model"},
		{"namespce", "namespace"},
		{"jsn", "json"},
		{"lmit", "limit"},
		{"lab", "label"},   // the only name it begins
		{"s", ""},          // begins two names, near none
		{"zzzzzz", ""},     // near nothing
		{"sessionsxx", ""}, // three edits away
		{"labl", "label"},
	} {
		if got := closest(c.typed, names); got != c.want {
			t.Errorf("closest(%q) = %q, want %q", c.typed, got, c.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"session", "sesion", 1}, {"abc", "acb", 2}} {
		if got := editDistance(c.a, c.b); got != c.want || editDistance(c.b, c.a) != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
