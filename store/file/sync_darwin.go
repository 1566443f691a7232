package file

import "os"

// datasync makes what was written to f durable. macOS has no fdatasync,
// and its fsync hands the data to the drive without asking the drive to
// write it out of its cache: f.Sync is fcntl F_FULLFSYNC, which does (Go
// falls back to fsync on a file system that refuses F_FULLFSYNC, such as
// an SMB share). So a journal write here is as durable as on Linux, at
// the cost of a full flush of the drive's cache.
func datasync(f *os.File) error { return f.Sync() }
