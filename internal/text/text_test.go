package text

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

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

// jsonTextV1 is JSONText as encoding/json's Decoder.Token reads a value:
// the reference that JSONText's faster reading must agree with.
func jsonTextV1(value []byte) string {
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var b strings.Builder
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		var s string
		switch v := tok.(type) {
		case string:
			s = v
		case json.Number:
			s = v.String()
		case bool:
			s = strconv.FormatBool(v)
		}
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return b.String()
}

func TestJSONText_AsDecoderToken(t *testing.T) {
	for _, in := range []string{
		`{"city":"Paris","days":3,"ok":true,"no":false,"none":null}`,
		`{"a":{"b":["x","y",{"c":-1.5e3}]},"k":""}`,
		`{"q":"say \"hi\"\n\u00e9\ud83d\ude00","q":"twice"}`,
		"{\"bad\":\"caf\xe9\",\"n\":0}",
		`["unterminated", "list"`,
		`{"a":1} {"b":2}`,
		`"just a string"`, `42`, `true`, `null`, ``, `not json`, `{"a":}`, `{}`, `[]`,
		`{"deep":[[[[["down"]]]]],"esc":"\/\\\t"}`,
	} {
		if got, want := JSONText([]byte(in)), jsonTextV1([]byte(in)); got != want {
			t.Errorf("JSONText(%q) = %q, want %q (as encoding/json reads it)", in, got, want)
		}
	}
}

func BenchmarkJSONText(b *testing.B) {
	v := []byte(`{"query":"weather in Paris tomorrow","units":"metric","days":3,"sources":["met office","meteo france"],"verbose":false}`)
	b.Run("jsontext", func(b *testing.B) {
		for b.Loop() {
			JSONText(v)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			jsonTextV1(v)
		}
	})
}
