package config

import (
	"errors"
	"testing"
)

// FuzzParse feeds the config loader arbitrary files: no input may panic,
// and every rejection is a *config.Error naming the file. The corpus lives
// in testdata/fuzz/FuzzParse; run with
//
//	go test -run XXX -fuzz FuzzParse -fuzztime 2m ./internal/config/
func FuzzParse(f *testing.F) {
	f.Add([]byte(full))
	f.Add([]byte("[persistence]\nbakend = 1\n"))
	f.Add([]byte("[connections.a]\nurl = \"memory:\"\n[persistence]\nconnection = \"a\"\n"))
	f.Add([]byte("[agent]\nmax_steps = -1\n"))
	f.Add([]byte("= \n[[x]]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := Default()
		err := Parse(cfg, "fuzz.toml", data)
		if err == nil {
			_ = cfg.StoreURL()
			_ = cfg.ModelSpec()
			return
		}
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("rejection is %T, not *config.Error: %v", err, err)
		}
		if ce.File != "fuzz.toml" {
			t.Fatalf("error names file %q", ce.File)
		}
	})
}
