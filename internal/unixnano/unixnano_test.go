package unixnano

import (
	"math"
	"testing"
	"time"
)

func TestOf(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, c := range []struct {
		t    time.Time
		want int64
	}{
		{time.Time{}, 0},
		{at, at.UnixNano()},
		{time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), math.MinInt64 + 1},
		{time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), math.MaxInt64},
	} {
		if got := Of(c.t); got != c.want {
			t.Errorf("Of(%v) = %d, want %d", c.t, got, c.want)
		}
	}
}

func TestTime(t *testing.T) {
	if got := Time(0); !got.IsZero() {
		t.Errorf("Time(0) = %v, want the zero time", got)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	got := Time(Of(at))
	if !got.Equal(at) || got.Location() != time.UTC {
		t.Errorf("Time(Of(%v)) = %v, want the same instant in UTC", at, got)
	}
}
