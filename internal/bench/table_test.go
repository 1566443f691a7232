package bench

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestWriteTable_FitsATerminal: the report fits 80 columns, and says which
// backends it did not measure and why.
func TestWriteTable_FitsATerminal(t *testing.T) {
	bpe := 312.0
	r := Result{Backend: "postgres", AppendP50: map[string]float64{"10": 1234, "10000": 1300}, AppendP99: map[string]float64{"10": 99999, "10000": 99999},
		FloorP50: 1000, AtomicFloorP50: 1100, ResumeMS: map[string]float64{"1000": 12.5, "20000": 250}, ResumeFloorMS: map[string]float64{"1000": 10.5, "20000": 200},
		BytesPerEvent: &bpe, Concurrent8vs1: 3.5, Concurrent64vs1: 12.25, Floor8vs1: 4.25, EventJSONBytes: 420,
		CPUPerAppend: 1234.5, FloorCPU: 1000.2, OwnCPU: 241.7, AllocsPerAppend: 12345, FloorAllocs: 99}
	rep := &Report{Results: []Result{r, {Backend: "redis", Error: "open: connection refused"}},
		Skipped: []Skip{{Backend: "mongodb", Reason: "nothing listens at 127.0.0.1:27017 and CAIRN_TEST_MONGODB is not set"}}}
	var b strings.Builder
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > 80 && !strings.Contains(line, "not measured") {
			t.Errorf("line of %d columns:\n%s", n, line)
		}
	}
	for _, want := range []string{"CPU per op (µs)", "1234.5", "241.7", "redis: not measured: open: connection refused", "mongodb: not measured: nothing listens at 127.0.0.1:27017"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table does not say %q:\n%s", want, out)
		}
	}
}
