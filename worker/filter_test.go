package worker_test

import (
	"reflect"
	"testing"

	"github.com/cairnhq/cairn/store/storetest"
	"github.com/cairnhq/cairn/worker"
)

// TestFilter_IsTheSuites: the conformance suite claims with the filter a
// worker of queue "q" uses, written out there so that the suite depends on
// no runtime package; this holds the two together.
func TestFilter_IsTheSuites(t *testing.T) {
	if got := worker.Filter("q"); !reflect.DeepEqual(got, storetest.WorkerFilter) {
		t.Errorf("worker.Filter(%q) = %+v, the suite's WorkerFilter %+v", "q", got, storetest.WorkerFilter)
	}
	if got := map[string]string{worker.QueueLabel: "q"}; !reflect.DeepEqual(got, storetest.Queue) {
		t.Errorf("the queue label %v, the suite's %v", got, storetest.Queue)
	}
}
