package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOperatorSafety_EveryBackend runs the operator's mistakes through the
// binary on every backend they apply to (the scripts in testdata/script
// cover the embedded store in more detail): a prefix given to commands
// that change or erase, a pending approval resumed without a decision,
// and a process without the key in an encrypted namespace. Each is
// refused, and the sessions stay byte for byte as they were.
func TestOperatorSafety_EveryBackend(t *testing.T) {
	for _, backend := range []string{"sqlite", "file", "postgres", "redis", "mongodb"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			c := newCLIEnv(t)
			store := testStore(t, c, backend, "safe_", "user-1", "user-12", "ops-1", "e1", "copy")
			cli := func(args ...string) (string, string, int) {
				t.Helper()
				return c.run(append(append([]string{}, store...), args...)...)
			}
			must := func(args ...string) string {
				t.Helper()
				out, errOut, code := cli(args...)
				if code != 0 {
					t.Fatalf("cairn %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
				}
				return out
			}
			refused := func(want string, args ...string) {
				t.Helper()
				out, errOut, code := cli(args...)
				if code == 0 || !strings.Contains(errOut, want) {
					t.Errorf("cairn %s: exit %d, want a refusal saying %q\n%s%s", strings.Join(args, " "), code, want, out, errOut)
				}
			}

			// Exact IDs for what changes or erases.
			must("run", "--session", "user-1", "one")
			must("run", "--session", "user-12", "twelve")
			before := must("--json", "sessions", "show", "user-12")
			if out := must("sessions", "delete", "user-1", "--yes"); !strings.Contains(out, "deleted user-1") {
				t.Errorf("delete user-1: %q", out)
			}
			refused("sessions whose ID starts with it:\n  user-12", "sessions", "delete", "user-1", "--yes")
			refused("sessions whose ID starts with it", "sessions", "resume", "user-1", "private note")
			refused("sessions whose ID starts with it", "sessions", "fork", "user-1", "--as", "copy")
			// No terminal on stdin and no --yes: delete asks no one, so it refuses.
			refused("--yes", "sessions", "delete", "user-12")
			if after := must("--json", "sessions", "show", "user-12"); after != before {
				t.Errorf("user-12 changed:\nbefore %s\nafter  %s", before, after)
			}

			// An approval recorded in the session holds for every process.
			script := c.writeFile("steps.json", `{"steps": [
				{"tool_calls": [{"name": "append_file", "arguments": {"path": "note.txt", "line": "first line"}}]},
				{"text": "noted"}]}`)
			note := filepath.Join(c.dir, "note.txt")
			c.env = append(c.env, "CAIRN_REQUIRE_APPROVAL=append_file")
			refused("waiting for approval of: append_file", "--model", "script:"+script, "run", "--session", "ops-1", "append the note")
			c.env = append(c.env, "CAIRN_REQUIRE_APPROVAL=none")
			refused("waiting for approval", "--model", "script:"+script, "sessions", "resume", "ops-1")
			if _, err := os.Stat(note); err == nil {
				t.Fatalf("the call ran without a person's approval")
			}
			must("--model", "script:"+script, "sessions", "resume", "ops-1", "--approve", "all")
			if data, err := os.ReadFile(note); err != nil || strings.Count(string(data), "first line") != 1 {
				t.Errorf("after the approval note.txt holds %q (%v), want the line once", data, err)
			}

			// Encryption that a process without the key cannot bypass.
			key := filepath.Join(c.dir, "raw.key")
			os.WriteFile(key, []byte("0123456789abcdefghijklmnopqrstuv"), 0o600)
			c.env = append(c.env, "CAIRN_ENCRYPTION_KEY_FILE="+key)
			// A namespace of its own, encrypted from its first session.
			if backend != "sqlite" && backend != "file" {
				store = append(append([]string{}, store[:len(store)-1]...), store[len(store)-1]+"_enc")
			} else {
				store = append(append([]string{}, store...), "--namespace", "enc")
			}
			must("run", "--session", "e1", "secret marker")
			sealed := must("--json", "sessions", "show", "e1")
			c.env = append(c.env, "CAIRN_ENCRYPTION_KEY_FILE=")
			refused("holds encrypted sessions", "run", "--session", "e1", "plaintext note")
			refused("holds encrypted sessions", "run", "--session", "new1", "plaintext")
			refused("holds encrypted sessions", "sessions", "list")
			refused("holds encrypted sessions", "sessions", "show", "e1")
			c.env = append(c.env, "CAIRN_ENCRYPTION_KEY_FILE="+key)
			if after := must("--json", "sessions", "show", "e1"); after != sealed {
				t.Errorf("the encrypted session changed:\nbefore %s\nafter  %s", sealed, after)
			}
			if _, _, code := cli("sessions", "show", "new1"); code == 0 {
				t.Errorf("a process without the key created new1 in the encrypted namespace")
			}
			must("sessions", "delete", "e1", "--yes")
		})
	}
}
