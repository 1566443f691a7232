package text

import "testing"

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "h"}, // é is two bytes: not split
		{"héllo", 3, "hé"},
		{"日本", 4, "日"},
		{"日本", 2, ""},
		{"", 0, ""},
	} {
		if got := Truncate(c.s, c.n); got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	cases := map[string]string{
		"postgres://u:s3cret@h/db":       "postgres://u:xxxxx@h/db",
		"postgres://u:s3cret@h:bad/db":   "postgres://u:xxxxx@h:bad/db",
		"redis://:s3cret@h:6379:7/0?x=1": "redis://:xxxxx@h:6379:7/0?x=1",
		"mongodb://u:p@ss@h:x/db":        "mongodb://u:xxxxx@h:x/db",
		"sqlite:///a.db":                 "sqlite:///a.db",
		"postgres://h:bad/db":            "postgres://h:bad/db",
		"%zz":                            "%zz",
	}
	for in, want := range cases {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
