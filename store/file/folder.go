//go:build linux || darwin

package file

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cairnhq/cairn"
)

// folder is a session's folder, open for List's reads of its small files
// (info.json, meta.json, ack.json) and of its log's length: one open of
// the folder, through the Root, and then each file by its name relative
// to it, with O_NOFOLLOW, so that no link leads out of the folder. That
// is about half the system calls of reading each through the Root, which
// walks the path anew every time.
type folder struct{ f *os.File }

// openFolder opens session id's folder.
func (s *Store) openFolder(id string) (folder, error) {
	f, err := s.ns.Open(id)
	return folder{f}, err
}

func (d folder) close() { d.f.Close() }

// read returns the content of the folder's file name.
func (d folder) read(name string) ([]byte, error) {
	fd, err := unix.Openat(int(d.f.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 1024)
	n := 0
	for {
		m, err := unix.Pread(fd, buf[n:], int64(n))
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		case m == 0:
			return buf[:n], nil
		}
		if n += m; n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
	}
}

// size returns the length of the folder's file name, a regular file.
func (d folder) size(name string) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(d.f.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, &fs.PathError{Op: "lstat", Path: name, Err: syscall.EINVAL}
	}
	return st.Size, nil
}

// listed returns session id's info as info.json has it, when List may
// take it without the session's lock: info.json reads and covers the
// whole log (an append writes it after the log), meta.json reads, and
// ack.json, if there is one to check against, agrees. ok is false
// otherwise: an append is under way, a crash interrupted one, or the
// files disagree, and the caller reads the session under its lock.
func (s *Store) listed(id string) (info cairn.SessionInfo, ok bool) {
	d, err := s.openFolder(id)
	if err != nil {
		return info, false
	}
	defer d.close()
	data, err := d.read(infoName)
	if err != nil {
		return info, false
	}
	m, err := parseCache(data, id)
	if err != nil {
		return info, false
	}
	if size, err := d.size(logName); err != nil || size != m.LogSize {
		return info, false
	}
	if data, err := d.read(metaName); err != nil || !metaReads(data, id) {
		return info, false
	}
	if data, err := d.read(ackName); err == nil {
		if a, err := parseAck(data); err == nil && ackAgrees(id, a, m.LogSize, m.LastSeq) != nil {
			return info, false
		}
	}
	m.Labels = cloneLabels(m.Labels)
	return m.SessionInfo, true
}
