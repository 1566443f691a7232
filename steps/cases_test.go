package steps_test

import (
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
)

// storeCases are the tests that run on every backend: the memory store
// here (TestSteps), the others in TestBackends.
var storeCases = []struct {
	name string
	fn   func(*testing.T, cairn.Store)
}{
	{"Run_ReplaysRecordedResults", testRunReplaysRecordedResults},
	{"Run_ResumesWhereItStopped", testRunResumesWhereItStopped},
	{"Run_Mismatch", testRunMismatch},
	{"Run_ErrorRecorded", testRunErrorRecorded},
	{"Run_Retryable", testRunRetryable},
	{"Run_NotIdempotent_OutcomeUnknown", testRunNotIdempotentOutcomeUnknown},
	{"Run_ResolveError_OutcomeUnknown", testRunResolveErrorOutcomeUnknown},
	{"Run_UnresolvedGoesOn", testRunUnresolvedGoesOn},
	{"Run_NotIdempotentStartFirst", testRunNotIdempotentStartFirst},
	{"Run_ReplyLost", testRunReplyLost},
	{"Run_Conflict", testRunConflict},
	{"Run_Cancelled", testRunCancelled},
	{"Session_Vars", testSessionVars},
	{"Run_TypesRoundTrip", testRunTypesRoundTrip},
	{"Run_ResultDoesNotEncode", testRunResultDoesNotEncode},
	{"ModelTool", testModelTool},
	{"Model_ErrorNotRecorded", testModelErrorNotRecorded},
	{"Session_Begin", testSessionBegin},
}

// TestSteps runs the store cases on the memory store.
func TestSteps(t *testing.T) {
	for _, c := range storeCases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, testcheck.MemoryStore(t)) })
	}
}
