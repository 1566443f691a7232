package sqlite

import (
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"

	"modernc.org/libc"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// driverName is the name of the driver that opens the store's connections:
// modernc's, constructed for the store alone (so that its hook reaches no
// other connection of the process), with stablePlans run on each
// connection it opens.
const driverName = "cairn-sqlite"

func init() {
	d := &msqlite.Driver{}
	d.RegisterConnectionHook(func(c msqlite.ExecQuerierContext, _ string) error {
		_, err := stablePlans(c, 1)
		if errors.Is(err, errNoHandle) {
			return nil // slower searches, not a store that cannot open
		}
		return err
	})
	sql.Register(driverName, d)
}

// errNoHandle is stablePlans' error for a connection whose SQLite handle
// is not where it reads it.
var errNoHandle = errors.New("query planner stability: the SQLite driver's connection has no handle where this store reads it")

// stablePlans sets SQLite's query planner stability guarantee
// (SQLITE_DBCONFIG_ENABLE_QPSG) on the connection c of modernc's driver to
// on (1) or off (0), or only reads it (-1), and returns it as it is then.
// Without it, SQLite plans a statement again whenever a value bound to it
// could change its plan, which FTS5's own statements met at every search:
// with it, a search of the long-term memory takes 22–29% less and a
// search across sessions half as long (docs/PERFORMANCE.md); an append
// costs the same. Plans then never look at the values bound, which
// no statement of this package needs (none matches LIKE or GLOB against a
// parameter, and none uses a partial index but through a literal).
//
// modernc's driver calls sqlite3_db_config for a few settings of its own
// and has no way to ask for another, so this reads the connection's
// handle from the driver's unexported fields. TestOpen_StablePlans holds
// it on every connection of a Store and a LongTerm: a driver that names
// them otherwise fails it (errNoHandle), while its connections open as
// before, without the setting.
func stablePlans(c any, set int32) (int32, error) {
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return 0, fmt.Errorf("%w (a connection of %T)", errNoHandle, c)
	}
	db, tf := v.Elem().FieldByName("db"), v.Elem().FieldByName("tls")
	if !db.IsValid() || db.Kind() != reflect.Uintptr || db.Uint() == 0 ||
		!tf.IsValid() || tf.Type() != reflect.TypeFor[*libc.TLS]() || tf.IsNil() {
		return 0, errNoHandle
	}
	tls := (*libc.TLS)(tf.UnsafePointer())
	// The arguments (an int, a pointer), 8 bytes each as libc.VaList packs
	// them, and the int the setting is read into.
	bp := tls.Alloc(24)
	defer tls.Free(24)
	if rc := sqlite3.Xsqlite3_db_config(tls, uintptr(db.Uint()), sqlite3.SQLITE_DBCONFIG_ENABLE_QPSG,
		libc.VaList(bp, set, bp+16)); rc != sqlite3.SQLITE_OK {
		return 0, fmt.Errorf("query planner stability: sqlite3_db_config returned %d", rc)
	}
	return int32(binary.NativeEndian.Uint32(libc.GoBytes(bp+16, 4))), nil
}
