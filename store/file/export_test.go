//go:build linux || darwin

package file

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/cairnhq/cairn"
)

// For the tests of package file_test.
var (
	JournalDir      = journalDir
	JournalsHolding = journalsHolding
	FeedName        = feedName
	SearchName      = searchName
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

// SetFeedMax makes the search feed start its next generation past n
// bytes, until the test ends.
func SetFeedMax(t testing.TB, n int64) {
	old := feedMax
	feedMax = n
	t.Cleanup(func() { feedMax = old })
}

// SearchLine returns a line of search.jsonl, checksum and all, that
// indexes a user message of text as event last, the last of a log of
// log bytes.
func SearchLine(last, log int64, text string) []byte {
	e := cairn.MustEvent(cairn.KindMessageUser, "r", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: text}}})
	e.Seq = last
	ss := &session{size: log}
	ss.info.LastSeq = last
	b, err := appendSearchLine(nil, ss, []cairn.Event{e})
	if err != nil {
		panic(err)
	}
	return b
}
