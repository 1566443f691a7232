// Package unixnano converts times to and from the Unix nanoseconds the SQL
// stores keep in their integer columns.
package unixnano

import (
	"math"
	"time"
)

// Of is t as stored: Unix nanoseconds, 0 for the zero time, clamped to
// the range an int64 holds.
func Of(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.Year() < 1678:
		return math.MinInt64 + 1
	case t.Year() > 2261:
		return math.MaxInt64
	}
	return t.UnixNano()
}

// Time is the inverse of Of, in UTC.
func Time(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
