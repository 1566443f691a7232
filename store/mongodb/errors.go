package mongodb

import (
	"errors"
	"fmt"
	"io"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/cairnhq/cairn"
)

// unavailable makes *errp, the error of a store method, wrap
// cairn.ErrUnavailable when it is an outage.
func unavailable(errp *error) {
	if err := *errp; outage(err) && !errors.Is(err, cairn.ErrUnavailable) {
		*errp = fmt.Errorf("%w: %w", cairn.ErrUnavailable, err)
	}
}

// outageCodes are the server's error codes that mean it cannot serve the
// call now: it is shutting down, stepping down or electing a primary, or
// could not reach another member in time.
var outageCodes = []int{
	6,     // HostUnreachable
	7,     // HostNotFound
	89,    // NetworkTimeout
	91,    // ShutdownInProgress
	189,   // PrimarySteppedDown
	9001,  // SocketException
	10107, // NotWritablePrimary
	11600, // InterruptedAtShutdown
	11602, // InterruptedDueToReplStateChange
	13435, // NotPrimaryNoSecondaryOk
	13436, // NotPrimaryOrSecondary
}

// outage reports whether err says that the server could not be reached or
// did not answer: a network error (the driver labels them), a timeout (the
// context's deadline, server selection, a wait for a pooled connection,
// maxTimeMS), a connection closed under the call, or one of the server's
// outage codes. Every other answer (a duplicate key the store does not
// translate, a refused command, a missing privilege) is not an outage.
func outage(err error) bool {
	if err == nil || errors.Is(err, cairn.ErrClosed) {
		return false
	}
	var sel topology.ServerSelectionError
	if mongo.IsNetworkError(err) || mongo.IsTimeout(err) || errors.As(err, &sel) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || cairn.IsUnavailable(err) {
		return true
	}
	var se mongo.ServerError
	if errors.As(err, &se) {
		for _, c := range outageCodes {
			if se.HasErrorCode(c) {
				return true
			}
		}
	}
	return false
}
