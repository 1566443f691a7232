//go:build linux || darwin

package file

import (
	"bytes"
	"io"
	"os"
)

// For the tests of package file_test.
var (
	JournalDir      = journalDir
	JournalsHolding = journalsHolding
)

// DeleteEvent removes the line of seq from session id's log, as a person
// with an editor would (for storetest.Abilities.DeleteEvent).
func DeleteEvent(s *Store, id string, seq int64) error {
	name := id + "/" + logName
	log, err := s.ns.ReadFile(name)
	if err != nil {
		return err
	}
	lines := bytes.SplitAfter(log, []byte("\n"))
	if seq < 1 || seq > int64(len(lines)) {
		return os.ErrNotExist
	}
	return s.ns.WriteFile(name, bytes.Join(append(lines[:seq-1:seq-1], lines[seq:]...), nil), 0o600)
}

// Opens returns how many times s opened a session's files.
func Opens(s *Store) int64 { return s.opens.Load() }

// MaxOpenSessions is how many idle sessions keep their files open.
const MaxOpenSessions = maxOpenSessions

// StoredEnvelopes returns the envelopes of session id's log as written,
// without their checksums, continued marks and newlines (for
// storetest.Abilities.Envelopes).
func StoredEnvelopes(s *Store, id string) ([][]byte, error) {
	f, err := s.ns.OpenFile(id+"/"+logName, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	var envs [][]byte
	for line := range bytes.Lines(buf) {
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte(" "))
		envs = append(envs, append([]byte("{"), envelopeOf(line)...))
	}
	return envs, nil
}
