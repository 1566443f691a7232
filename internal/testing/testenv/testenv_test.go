package testenv

import (
	"bytes"
	"testing"
)

func TestSkips_Write(t *testing.T) {
	var s skips
	var none bytes.Buffer
	s.write(&none, "store/postgres")
	if none.Len() != 0 {
		t.Fatalf("no test skipped, wrote %q", none.String())
	}
	for range 3 {
		s.note(Postgres)
	}
	s.note(Redis)
	var out bytes.Buffer
	s.write(&out, "internal/x")
	want := "internal/x: 3 tests skipped, CAIRN_TEST_POSTGRES is not set (README.md, Testing)\n" +
		"internal/x: 1 test skipped, CAIRN_TEST_REDIS is not set (README.md, Testing)\n"
	if out.String() != want {
		t.Fatalf("wrote\n%s\nwant\n%s", out.String(), want)
	}
}

// TestURL_CountsSkips runs URL for a variable that is never set: a skip it
// counts (outside CI, where it fails instead).
func TestURL_CountsSkips(t *testing.T) {
	const name = "TESTENV_NEVER_SET"
	t.Setenv(name, "")
	t.Setenv("CI", "")
	before := count(name)
	t.Run("skips", func(t *testing.T) {
		URL(t, name)
		t.Error("URL returned for an unset variable")
	})
	if got := count(name); got != before+1 {
		t.Fatalf("skips of %s: %d, want %d", name, got, before+1)
	}
}

func count(name string) int {
	skipped.mu.Lock()
	defer skipped.mu.Unlock()
	return skipped.n[name]
}

func TestRaceEnv(t *testing.T) {
	for _, c := range [][2]string{
		{"", "atexit_sleep_ms=0"},
		{"halt_on_error=1", "halt_on_error=1 atexit_sleep_ms=0"},
		{"atexit_sleep_ms=50 log_path=x", "atexit_sleep_ms=50 log_path=x"},
	} {
		if got := RaceEnv(c[0]); got != c[1] {
			t.Errorf("RaceEnv(%q) = %q, want %q", c[0], got, c[1])
		}
	}
}
