package config

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
)

// FuzzParse feeds the config loader arbitrary files. No input may panic;
// every rejection is a *config.Error naming the file; and every accepted
// file means one configuration: written back as TOML and parsed again it
// gives the same value, and a file that contradicted itself would not
// have been accepted in the first place. The corpus lives in
// testdata/fuzz/FuzzParse; run with
//
//	go test -run XXX -fuzz FuzzParse -fuzztime 2m ./internal/config/
func FuzzParse(f *testing.F) {
	f.Add([]byte(full))
	f.Add([]byte("[persistence]\nbakend = 1\n"))
	f.Add([]byte("[connections.a]\nurl = \"memory:\"\n[persistence]\nconnection = \"a\"\n"))
	f.Add([]byte("[agent]\nmax_steps = -1\n"))
	f.Add([]byte("= \n[[x]]\n"))
	f.Add([]byte("[persistence]\nbackend = \"memory\"\nurl = \"sqlite:///x.db\"\n"))
	f.Add([]byte("[persistence]\nurl = \"redis://h/0\"\n[agent]\nrequire_approval = [\"append_file\"]\n"))
	f.Add([]byte("[connections.\"a b\"]\nurl = \"file:///x\"\n[persistence]\nconnection = \"a b\"\n[model]\nprovider = \"openai\"\nname = \"m\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := Default()
		err := Parse(cfg, "fuzz.toml", data)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("rejection is %T, not *config.Error: %v", err, err)
			}
			if ce.File != "fuzz.toml" {
				t.Fatalf("error names file %q", ce.File)
			}
			return
		}
		_ = cfg.StoreURL()
		_ = cfg.ModelSpec()

		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(cfg); err != nil {
			t.Fatalf("encode the parsed configuration: %v", err)
		}
		again := Default()
		if err := Parse(again, "again.toml", buf.Bytes()); err != nil {
			t.Fatalf("the parsed configuration, written back, is refused: %v\n--- input\n%s\n--- written\n%s", err, data, buf.Bytes())
		}
		if !reflect.DeepEqual(normal(cfg), normal(again)) {
			t.Fatalf("written back and parsed again, the configuration differs:\n%+v\n%+v\n--- written\n%s", cfg, again, buf.Bytes())
		}
		if cfg.StoreURL() != again.StoreURL() || cfg.ModelSpec() != again.ModelSpec() {
			t.Fatalf("store %q / %q, model %q / %q", cfg.StoreURL(), again.StoreURL(), cfg.ModelSpec(), again.ModelSpec())
		}
	})
}

// normal returns c without what a round trip may change in form only: the
// source file, and an empty list or map written as nothing.
func normal(c *Config) Config {
	n := *c
	n.Source = ""
	if len(n.Connections) == 0 {
		n.Connections = nil
	}
	if len(n.Agent.RequireApproval) == 0 {
		n.Agent.RequireApproval = nil
	}
	return n
}
