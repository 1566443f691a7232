package redis

import (
	"errors"
	"fmt"
	"io"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
)

// unavailable makes *errp, the error of a store method, wrap
// cairn.ErrUnavailable when it is an outage.
func unavailable(errp *error) {
	if err := *errp; outage(err) && !errors.Is(err, cairn.ErrUnavailable) {
		*errp = fmt.Errorf("%w: %w", cairn.ErrUnavailable, err)
	}
}

// outage reports whether err says that Redis could not be reached or did
// not answer: an error of the network or a connection the server closed
// (io.EOF), no connection free in the pool in time, or an answer that
// says the server cannot serve anyone now (LOADING its dataset, MASTERDOWN,
// TRYAGAIN, CLUSTERDOWN, its maximum number of clients reached). Every
// other answer, such as OOM (maxmemory reached), WRONGTYPE or NOPERM, is
// not an outage.
func outage(err error) bool {
	if err == nil || errors.Is(err, cairn.ErrClosed) {
		return false
	}
	return errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, goredis.ErrPoolTimeout) ||
		errors.Is(err, goredis.ErrPoolExhausted) ||
		goredis.IsLoadingError(err) ||
		goredis.IsMasterDownError(err) ||
		goredis.IsTryAgainError(err) ||
		goredis.IsClusterDownError(err) ||
		goredis.IsMaxClientsError(err) ||
		cairn.IsUnavailable(err)
}
