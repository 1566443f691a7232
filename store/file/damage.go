//go:build linux || darwin

package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// damaged is one session's damage, as the store remembers it.
//
// Damage is found by the calls that read a session: a log shorter than
// what the store acknowledged, a meta.json that does not read, a line that
// fails its checksum, journal records that do not fit the log (see
// refresh, loadBase, decodeLog and replaySession). It is a
// *driver.DamagedError, and the store remembers it for as long as it is
// open, with the session's lock file (a session deleted and created again
// is another session): the session is then refused to every call but
// Delete, and List shows it as cairn.StatusDamaged. Another process finds
// the same damage when it reads the same files.
type damaged struct {
	lockID fileID
	err    *driver.DamagedError
}

// noteDamage remembers the damage of session id, whose lock file is
// lockID. Damage without a lock file (a folder without one) is found
// again by every call, and is not remembered.
func (s *Store) noteDamage(id string, lockID fileID, d *driver.DamagedError) {
	if lockID == (fileID{}) {
		return
	}
	s.mu.Lock()
	if s.damage == nil {
		s.damage = map[string]damaged{}
	}
	s.damage[id] = damaged{lockID: lockID, err: d}
	s.mu.Unlock()
}

// damageOf returns the remembered damage of session id, if its lock file
// is still lockID.
func (s *Store) damageOf(id string, lockID fileID) *driver.DamagedError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.damage[id]; ok && d.lockID == lockID {
		return d.err
	}
	return nil
}

// forgetDamage drops what the store remembers of session id, once it is
// deleted.
func (s *Store) forgetDamage(id string) {
	s.mu.Lock()
	delete(s.damage, id)
	s.mu.Unlock()
}

// anyDamage reports whether the store remembers any damaged session.
func (s *Store) anyDamage() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.damage) > 0
}

// lockFileID returns the identity of session id's lock file, without
// opening it.
func (s *Store) lockFileID(id string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(s.nsDir.Fd()), id+"/"+lockName, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fileID{}, err
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, nil
}

// damagedInfo is what List shows of a damaged session: as much of its
// info as can be read, with the status damaged.
func (s *Store) damagedInfo(id string) cairn.SessionInfo {
	info := cairn.SessionInfo{ID: id}
	if m, err := s.readCache(id); err == nil {
		info = m.SessionInfo
	} else if m, err := s.readMeta(id); err == nil {
		info = m.SessionInfo
	}
	if info.UpdatedAt.IsZero() {
		if fi, err := s.ns.Lstat(id); err == nil {
			info.UpdatedAt = fi.ModTime().UTC()
		}
	}
	if info.CreatedAt.IsZero() {
		info.CreatedAt = info.UpdatedAt
	}
	info.Labels = cloneLabels(info.Labels)
	info.Status = cairn.StatusDamaged
	return info
}

var _ driver.Checker = (*Store)(nil)

// Check implements driver.Checker. For every session of the namespace it
// checks what Load and Append check (meta.json, the log's length against
// what was acknowledged, its journal records) and reads the whole log,
// each line against its checksum and the seqs against the info. It also
// reports leftovers: creations and deletions a crash interrupted, and
// journals kept for damaged sessions. It writes nothing. A torn tail,
// which a crash leaves and the next append cuts, is not damage.
func (s *Store) Check(ctx context.Context) (*driver.CheckReport, error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	defer s.ops.RUnlock()
	entries, err := s.readNamespace()
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	rep := &driver.CheckReport{Problems: []driver.Problem{}}
	var leftovers []driver.Problem
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name := e.Name()
		switch {
		case strings.HasPrefix(name, trashPrefix), strings.HasPrefix(name, tmpPrefix) && stale(e):
			leftovers = append(leftovers, driver.Problem{Where: name,
				Msg: "what a crash left of creating or deleting a session",
				Fix: "remove it, or let `cairn sessions gc` (Sweep) remove it"})
		case e.IsDir() && cairn.ValidateID(name) == nil:
			live, d, err := s.checkSession(ctx, name)
			if err != nil {
				return nil, fmt.Errorf("check: session %s: %w", name, err)
			}
			if live {
				rep.Sessions++
			}
			if d != nil {
				rep.Problems = append(rep.Problems, driver.Problem{Session: name, Where: d.Where, Msg: d.Msg, Damage: true,
					Fix: "restore the session's folder " + name + "/ from a backup, or delete the session " +
						"(cairn sessions delete " + name + "); the other sessions are not affected"})
			}
		}
	}
	kept, err := s.keptJournals(ctx)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	rep.Problems = append(rep.Problems, append(leftovers, kept...)...)
	return rep, nil
}

// stale reports whether a temporary folder is old enough to be abandoned.
func stale(e fs.DirEntry) bool {
	fi, err := e.Info()
	return err == nil && time.Since(fi.ModTime()) > staleTmpAge
}

// checkSession checks one session under its shared lock, from the files
// (not from what the store remembers of them), and returns its damage.
// live is false for a session deleted meanwhile or expired, which is not
// checked.
func (s *Store) checkSession(ctx context.Context, id string) (live bool, d *driver.DamagedError, err error) {
	ss := s.acquire(id)
	defer s.release(id, ss)
	ss.known = false // read meta.json and info.json again
	d, err = s.lockAny(ctx, ss, id, false)
	if errors.Is(err, cairn.ErrNotFound) {
		return false, nil, nil
	}
	if de, ok := errors.AsType[*driver.DamagedError](err); ok {
		return true, de, nil
	}
	if err != nil {
		return false, nil, err
	}
	defer ss.unlock()
	if d != nil {
		return true, d, nil
	}
	if s.expired(ss.info, s.opts.Now()) {
		return false, nil, nil
	}
	buf := make([]byte, ss.size)
	if _, err := ss.logF.ReadAt(buf, 0); err != nil {
		return true, nil, fmt.Errorf("read log: %w", err)
	}
	evs, err := decodeLog(buf, 1, 1)
	if err == nil && int64(len(evs)) != ss.info.LastSeq {
		err = fmt.Errorf("%w: the log holds %d events where the info says %d", errCorrupt, len(evs), ss.info.LastSeq)
	}
	if err != nil {
		d := s.logDamage(id, err)
		s.noteDamage(id, ss.lockID, d)
		return true, d, nil
	}
	return true, nil, nil
}

// logDamage is the damage decodeLog found in session id's log.
func (s *Store) logDamage(id string, err error) *driver.DamagedError {
	where := id + "/" + logName
	if le, ok := errors.AsType[*lineError](err); ok {
		where += fmt.Sprintf(", seq %d", le.seq)
		err = le.err
	}
	return &driver.DamagedError{Session: id, Where: where, Msg: strings.TrimPrefix(err.Error(), errCorrupt.Error()+": ")}
}
