// Package testenv finds the real servers that backend tests run against.
//
// Each backend's tests name the environment variable that holds their
// server's address (CAIRN_TEST_POSTGRES, CAIRN_TEST_REDIS,
// CAIRN_TEST_MONGODB). Locally a missing variable skips the test with a
// message naming it. Under CI (CI=true) a missing variable fails the test,
// so that a backend can never pass CI by being skipped.
package testenv

import (
	"os"
	"testing"
)

// The variables that name the test servers.
const (
	Postgres = "CAIRN_TEST_POSTGRES"
	Redis    = "CAIRN_TEST_REDIS"
	MongoDB  = "CAIRN_TEST_MONGODB"
)

// URL returns the value of the environment variable name. When it is empty
// the test is skipped, or failed under CI.
func URL(tb testing.TB, name string) string {
	tb.Helper()
	v := os.Getenv(name)
	if v != "" {
		return v
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s is not set: CI must run every backend's tests (see .ci/run)", name)
	}
	tb.Skipf("%s is not set: set it to a test server's URL to run these tests", name)
	return ""
}
