// Package driver is the API for those who write a cairn store, as
// database/sql/driver is for database/sql: what every backend calls and a
// program that only uses stores never needs.
//
// # Quick start
//
// A store's methods open with a Guard, which refuses a closed store and
// the arguments every store refuses (a bad ID, an invalid append, a lease
// with no holder), so that all backends answer the same inputs with the
// same errors:
//
//	func (s *Store) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) error {
//		events, err := s.guard.Append(s.opts.Limits, id, expectSeq, events)
//		if err != nil {
//			return err
//		}
//		...
//	}
//
// # What a store uses
//
// It stores each event as the envelope AppendEnvelope writes and reads it
// back with ParseEnvelope; keeps each session's SessionInfo up to date
// from the InfoDelta that Summarize computes of each append; and pages
// List with a Cursor (PageInfos does filtering, ordering and paging for a
// store that cannot do them natively). The conformance suite in package
// storetest checks all of it; docs/STORES.md, "Writing a store", tells how
// the stores of this module are built.
package driver
