// Package cairngenkit keeps Firebase Genkit's (github.com/firebase/genkit/go
// v1.4.0) sessions and durable streams in a cairn store: SQLite, files,
// PostgreSQL, Redis, MongoDB, memory, or store/crypt over any of them. A
// Genkit session's state and a flow's streamed chunks then survive a
// restart, and they are ordinary cairn sessions that `cairn sessions list`
// and `cairn sessions show` read, that expire with the store's TTL and go
// with Delete.
//
// It is a module of its own (github.com/cairnhq/cairn/contrib/genkit), so
// that cairn's core module requires nothing of Genkit. Its package name
// is cairngenkit, so that it does not shadow Genkit's own genkit package.
//
// # Quick start
//
//	cs, err := cairn.Open(ctx, "sqlite:///var/lib/app/cairn.db", cairn.StoreOptions{})
//	if err != nil {
//		return err
//	}
//	defer cs.Close()
//	store := cairngenkit.NewStore[Chat](cs, cairngenkit.StoreOptions{})
//
//	// In a flow: load the session, or start it.
//	sess, err := session.Load(ctx, store, id)
//	var nf *session.NotFoundError
//	if errors.As(err, &nf) {
//		sess, err = session.New(ctx, session.WithID[Chat](id), session.WithStore[Chat](store))
//	}
//	…
//	err = sess.UpdateState(ctx, next) // one atomic append; refused if stale
//
//	// Durable streams for genkit.Handler:
//	http.HandleFunc("POST /chat", genkit.Handler(flow,
//		genkit.WithStreamManager(cairngenkit.NewStreamManager(cs, cairngenkit.StreamOptions{}))))
//
// # Sessions: what is saved, and when
//
// Store implements session.Store[S]. Each Save (session.New with a store,
// Session.UpdateState) appends one state.set event to the cairn session of
// the same ID, setting the variable StoreOptions.Key (DefaultKey,
// "genkit.state") to the whole state as JSON; Get folds the session and
// decodes that variable into S. Saves are appended, never overwritten, so
// the session's history holds every state it went through.
//
// Each Save expects the session at the seq its Store last read or wrote
// (cairn's expected-seq append): a writer whose view is stale gets a
// *ConflictError, errors.Is cairn.ErrConflict, and nothing is written. A
// Store remembers one seq per session: give each flow run its own View so
// that two runs of one process updating one session are checked against
// each other as well as against other processes.
//
// # Streams
//
// StreamManager implements streaming.StreamManager: each durable stream is
// a cairn session of the stream's ID holding a run.started, one custom
// event of type ChunkType per chunk, appended as it is written, and a
// run.finished with the output or the error. A subscriber reads them from
// the store: one in another process, or one that reconnects after a
// restart, gets every chunk (SubscribeFrom skips those it already has) and
// the result.
//
// docs/GENKIT.md in the repository says what is not supported yet.
package cairngenkit
