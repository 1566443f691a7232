package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestMutations_MatchTheCode checks every mutation against the code it
// breaks, so that a change that moves the text fails here, in the normal
// test run, rather than only in the long mutation run.
func TestMutations_MatchTheCode(t *testing.T) {
	names := map[string]bool{}
	for _, m := range mutations {
		if names[m.Name] {
			t.Errorf("mutation %s: the name is used twice", m.Name)
		}
		names[m.Name] = true
		src, err := os.ReadFile(filepath.Join("..", "..", "..", m.File))
		if err != nil {
			t.Errorf("mutation %s: %v", m.Name, err)
			continue
		}
		if n := bytes.Count(src, []byte(m.Old)); n != 1 {
			t.Errorf("mutation %s: the text to replace occurs %d times in %s, want once", m.Name, n, m.File)
		}
		if m.Old == m.New {
			t.Errorf("mutation %s: New is Old", m.Name)
		}
	}
}
