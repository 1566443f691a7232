package postgres

import (
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cairnhq/cairn"
)

// PostgreSQL error codes the store translates.
const (
	codeUniqueViolation     = "23505"
	codeForeignKeyViolation = "23503"
)

// outageCodes are the SQLSTATEs that mean the server cannot serve the call
// now, rather than an answer to it: it is shutting down or starting up,
// has no connection slot left, or gave up waiting (a statement or lock
// timeout). Class 08, connection exceptions, is matched apart.
var outageCodes = map[string]bool{
	"57P01": true, // admin_shutdown: the connection was terminated
	"57P02": true, // crash_shutdown
	"57P03": true, // cannot_connect_now: starting up or shutting down
	"57P05": true, // idle_session_timeout
	"53300": true, // too_many_connections
	"57014": true, // query_canceled: a statement timeout or a cancel request
	"55P03": true, // lock_not_available: a lock timeout
}

// translate maps PostgreSQL's errors to cairn's sentinels where one fits:
// a unique or foreign key violation of an append to ErrConflict or
// ErrNotFound, an outage to an error wrapping cairn.ErrUnavailable. It
// returns any other error (an answer of the server, such as a full disk,
// a missing privilege or table, a constraint it does not know) unchanged.
func translate(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case codeUniqueViolation:
			return fmt.Errorf("%w: %s", cairn.ErrConflict, pe.Message)
		case codeForeignKeyViolation:
			return fmt.Errorf("%w: %s", cairn.ErrNotFound, pe.Message)
		}
	}
	if outage(err) && !errors.Is(err, cairn.ErrUnavailable) {
		return fmt.Errorf("%w: %w", cairn.ErrUnavailable, err)
	}
	return err
}

// outage reports whether err says that PostgreSQL could not be reached or
// did not answer: an error of the network or of a closed connection, a
// connection that could not be made, a timeout, or one of the server's
// outage codes. An error the server sent in answer to the call is an
// outage only for those codes, even when it came while connecting (a
// wrong password, a missing database).
func outage(err error) bool {
	if err == nil || errors.Is(err, cairn.ErrClosed) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return outageCodes[pe.Code] || len(pe.Code) == 5 && pe.Code[:2] == "08"
	}
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) ||
		pgconn.Timeout(err) ||
		errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		cairn.IsUnavailable(err)
}
