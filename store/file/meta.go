//go:build linux || darwin

package file

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"

	"github.com/cairnhq/cairn"
)

// metaFormat names the form of meta.json and of the info in info.json.
const metaFormat = "cairn.file.session"

// metaFile is the JSON form of meta.json: the session's SessionMeta and
// SessionInfo (the first is part of the second) as of the first LogSize
// bytes of its log.
type metaFile struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	cairn.SessionInfo
	LogSize int64 `json:"log_size"`
}

// cacheFile is the JSON form of info.json: a metaFile and its CRC-32C.
// info.json is overwritten in place, without fsync, after every append, so
// a reader can catch it half written or a crash can tear it; the checksum
// tells. The file is padded with spaces when its content shrinks.
type cacheFile struct {
	CRC  uint32          `json:"crc32c"`
	Info json.RawMessage `json:"info"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeMeta writes the metaFile of info, byte for byte as json.Marshal
// would, without reflection: it runs after every append.
func encodeMeta(info cairn.SessionInfo, logSize int64) ([]byte, error) {
	created, err := info.CreatedAt.MarshalJSON()
	if err != nil {
		return nil, err
	}
	updated, err := info.UpdatedAt.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 256+len(info.FirstMessage))
	b = append(b, `{"format":"`+metaFormat+`","version":1,"id":`...)
	b = appendString(b, info.ID)
	b = append(b, `,"first_message":`...)
	b = appendString(b, info.FirstMessage)
	b = append(b, `,"created_at":`...)
	b = append(b, created...)
	b = append(b, `,"updated_at":`...)
	b = append(b, updated...)
	b = append(b, `,"status":`...)
	b = appendString(b, string(info.Status))
	b = append(b, `,"steps":`...)
	b = strconv.AppendInt(b, int64(info.Steps), 10)
	b = append(b, `,"labels":`...)
	if info.Labels == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '{')
		for i, k := range slices.Sorted(maps.Keys(info.Labels)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, info.Labels[k])
		}
		b = append(b, '}')
	}
	b = append(b, `,"last_seq":`...)
	b = strconv.AppendInt(b, info.LastSeq, 10)
	b = append(b, `,"log_size":`...)
	b = strconv.AppendInt(b, logSize, 10)
	return append(b, '}'), nil
}

// encodeCache writes the cacheFile of meta, as json.Marshal would (meta
// is json.Marshal's own compact output), without running it through the
// encoder again: this is on every append's path.
func encodeCache(meta []byte) []byte {
	b := make([]byte, 0, len(meta)+32)
	b = append(b, `{"crc32c":`...)
	b = strconv.AppendUint(b, uint64(crc32.Checksum(meta, castagnoli)), 10)
	b = append(b, `,"info":`...)
	b = append(b, meta...)
	return append(b, '}')
}

// parseMeta decodes and checks the info of session id.
func parseMeta(data []byte, id string) (metaFile, error) {
	var m metaFile
	if err := json.Unmarshal(data, &m); err != nil {
		return metaFile{}, err
	}
	if m.Format != metaFormat || m.Version != 1 || m.ID != id || m.LogSize < 0 {
		return metaFile{}, fmt.Errorf("not the info of session %s in format %s version 1", id, metaFormat)
	}
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	return m, nil
}

// errBadCache is returned for an info.json that fails its checksum.
var errBadCache = errors.New("info.json: checksum mismatch")

// readMeta reads the session's durable meta.json.
func (s *Store) readMeta(id string) (metaFile, error) {
	data, err := s.ns.ReadFile(id + "/" + metaName)
	if err != nil {
		return metaFile{}, err
	}
	m, err := parseMeta(data, id)
	if err != nil {
		return metaFile{}, fmt.Errorf("%s: %w", metaName, err)
	}
	return m, nil
}

// metaReads reports whether data, session id's meta.json, reads, more
// cheaply than readMeta: it is valid JSON and starts as encodeMeta (and
// before it json.Marshal) writes the session's.
func metaReads(data []byte, id string) bool {
	head := appendString([]byte(`{"format":"`+metaFormat+`","version":1,"id":`), id)
	return bytes.HasPrefix(data, head) && json.Valid(data)
}

// readCache reads the session's info.json and checks its checksum.
func (s *Store) readCache(id string) (metaFile, error) {
	data, err := s.ns.ReadFile(id + "/" + infoName)
	if err != nil {
		return metaFile{}, err
	}
	return parseCache(data, id)
}

// parseCache decodes data, session id's info.json, and checks its
// checksum.
func parseCache(data []byte, id string) (metaFile, error) {
	var c cacheFile
	if err := json.Unmarshal(data, &c); err != nil {
		return metaFile{}, fmt.Errorf("%s: %w", infoName, err)
	}
	if crc32.Checksum(c.Info, castagnoli) != c.CRC {
		return metaFile{}, errBadCache
	}
	m, err := parseMeta(c.Info, id)
	if err != nil {
		return metaFile{}, fmt.Errorf("%s: %w", infoName, err)
	}
	return m, nil
}

// saveInfo writes ss's info to info.json and its log length and last seq
// to ack.json, and first to meta.json when durable is set (a checkpoint).
func (s *Store) saveInfo(ss *session, id string, durable bool) error {
	meta, err := encodeMeta(ss.info, ss.size)
	if err != nil {
		return err
	}
	if durable {
		if err := s.writeFile(id+"/"+metaName, meta, true); err != nil {
			return err
		}
		ss.metaSize = ss.size
	}
	data := encodeCache(meta)
	if n := ss.infoLen - int64(len(data)); n > 0 {
		data = append(data, bytes.Repeat([]byte{' '}, int(n))...)
	}
	_, err = ss.infoF.WriteAt(data, 0)
	if err != nil {
		err = fmt.Errorf("write %s: %w", infoName, err)
	} else {
		ss.infoLen = max(ss.infoLen, int64(len(data)))
	}
	return errors.Join(err, s.saveAck(ss))
}

// writeFile replaces a file atomically: it writes a temporary file beside
// it and renames it over. With durable set the temporary file is fsynced
// before the rename and the folder after it.
func (s *Store) writeFile(name string, data []byte, durable bool) error {
	tmp := name + ".tmp"
	f, err := s.ns.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.ns.Rename(tmp, name)
	}
	if err != nil {
		s.ns.Remove(tmp)
		return fmt.Errorf("write %s: %w", path.Base(name), err)
	}
	if durable {
		return s.syncDir(path.Dir(name))
	}
	return nil
}

// syncDir fsyncs a folder of the namespace, making the names created,
// renamed or removed in it durable.
func (s *Store) syncDir(name string) error {
	d, err := s.ns.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync folder: %w", err)
	}
	return nil
}
