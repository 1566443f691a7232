package migrations

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestRead(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0002_leases.sql": {Data: []byte("CREATE TABLE l;")},
		"m/0001_init.sql":   {Data: []byte("CREATE TABLE s;")},
		"m/README":          {Data: []byte("not a migration")},
	}
	ms, err := Read(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	want := []Migration{
		{Version: 1, File: "0001_init.sql", Name: "0001_init", SQL: "CREATE TABLE s;"},
		{Version: 2, File: "0002_leases.sql", Name: "0002_leases", SQL: "CREATE TABLE l;"},
	}
	if len(ms) != len(want) || ms[0] != want[0] || ms[1] != want[1] {
		t.Errorf("Read = %+v, want %+v", ms, want)
	}
}

func TestRead_Refuses(t *testing.T) {
	cases := []struct {
		name  string
		files []string
		want  string
	}{
		{"none", nil, "no migrations in m"},
		{"a gap", []string{"0001_a.sql", "0003_c.sql"}, "migration 0003_c.sql: version 3 where 2 comes next"},
		{"not from 1", []string{"0002_b.sql"}, "version 2 where 1 comes next"},
		{"three digits", []string{"001_a.sql"}, "migration 001_a.sql: name is not NNNN_name.sql"},
		{"no name", []string{"0001.sql"}, "name is not NNNN_name.sql"},
		{"version 0", []string{"0000_a.sql"}, "name is not NNNN_name.sql"},
		{"twice", []string{"0001_a.sql", "0001_b.sql"}, "migration 0001_b.sql: version 1 where 2 comes next"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for _, f := range c.files {
				fsys["m/"+f] = &fstest.MapFile{Data: []byte("SELECT 1;")}
			}
			_, err := Read(fsys, "m")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Read(%v) = %v, want an error saying %q", c.files, err, c.want)
			}
		})
	}
}
