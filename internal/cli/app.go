// Package cli is the plumbing of the cairn command: configuration, stores,
// session lookup and output. The commands themselves live in cmd/cairn.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/config"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/store/crypt"
)

// Flags are the global flags of every command.
type Flags struct {
	Store     string
	Namespace string
	Config    string
	Model     string
	JSON      bool
}

// App carries what every command needs.
type App struct {
	Flags  Flags
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Project is where the command runs: the project's folder and config
	// file, set by Config.
	Project config.Project

	cfg *config.Config
	// storeNamed says how the store was named for this command ("" when
	// it is the project's, found or by default); see StoreNamed.
	storeNamed string

	logOnce sync.Once
	logger  *slog.Logger
	logMu   sync.Mutex
	printed map[string]bool // the warnings printed

	intMu       sync.Mutex
	onInterrupt func() bool
}

// NewApp returns an App on the process's standard streams and environment.
func NewApp() *App {
	return &App{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

// Config loads the configuration once: file, then environment, then flags.
func (a *App) Config() (*config.Config, error) {
	if a.cfg != nil {
		return a.cfg, nil
	}
	explicit := a.Flags.Config
	if explicit == "" {
		explicit = a.Getenv("CAIRN_CONFIG")
	}
	proj, err := config.FindProject(".", explicit)
	if err != nil {
		return nil, Usage("check the path given with --config or CAIRN_CONFIG", "%v", err)
	}
	cfg, err := config.Load(proj.File)
	if err != nil {
		return nil, Fail(err, "fix the config file; the keys are documented in the README")
	}
	origin, named := fromDefault, ""
	if cfg.Persistence.URL != "" || cfg.Persistence.Connection != "" {
		origin = fromFile
		switch {
		case a.Flags.Config != "":
			named = "--config " + proj.File
		case explicit != "":
			named = "CAIRN_CONFIG=" + proj.File
		}
	}
	if err := cfg.ApplyEnv(a.Getenv); err != nil {
		return nil, Fail(err, "fix the environment variable")
	}
	if a.Getenv("CAIRN_STORE") != "" {
		origin, named = fromCommand, "CAIRN_STORE"
	}
	if a.Flags.Store != "" {
		cfg.SetStore(a.Flags.Store)
		origin, named = fromCommand, "--store"
	}
	if a.Flags.Namespace != "" {
		cfg.Persistence.Namespace = a.Flags.Namespace
	}
	if a.Flags.Model != "" {
		cfg.SetModel(a.Flags.Model)
	}
	if err := cfg.Validate("flags"); err != nil {
		return nil, Usage("see cairn --help for the flags", "%v", err)
	}
	if err := resolveStore(cfg, proj, origin); err != nil {
		return nil, err
	}
	a.Project = proj
	a.cfg = cfg
	a.storeNamed = named
	return cfg, nil
}

// StoreNamed says how the configured store was named for this command:
// "--store", "CAIRN_STORE", or the config file given with --config or
// CAIRN_CONFIG when that file sets the store (url or connection); "" when
// the store is the project's, from a cairn.toml found from the working
// directory (or the user's config dir) or the default. A store named so
// is the only one a lookup of a session searches: the user-global store
// is searched only after the project's.
func (a *App) StoreNamed() string {
	if _, err := a.Config(); err != nil {
		return ""
	}
	return a.storeNamed
}

// StoreOptions returns the options stores are opened with.
func (a *App) StoreOptions() (cairn.StoreOptions, error) {
	cfg, err := a.Config()
	if err != nil {
		return cairn.StoreOptions{}, err
	}
	return cairn.StoreOptions{Namespace: cfg.Persistence.Namespace, TTL: cfg.TTL()}, nil
}

// OpenStore opens the configured store (the project's store).
func (a *App) OpenStore(ctx context.Context) (cairn.Store, string, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, "", err
	}
	u := cfg.StoreURL()
	s, err := a.OpenURL(ctx, u)
	return s, u, err
}

// OpenURL opens a store by URL with the configured namespace and TTL,
// creating the folder of a local store when it is missing, always through
// store/crypt: with an encryption key configured the store encrypts every
// event; without one it refuses a namespace that holds encrypted sessions,
// naming its key, so that no command reads ciphertext as text or adds
// plaintext to an encrypted session. Either way the store keeps the
// backend's leases, claims and checks.
func (a *App) OpenURL(ctx context.Context, rawURL string) (cairn.Store, error) {
	opts, err := a.StoreOptions()
	if err != nil {
		return nil, err
	}
	ring, err := a.Keyring()
	if err != nil {
		return nil, err
	}
	s, err := crypt.Open(ctx, withTimeouts(rawURL), opts, ring)
	if err != nil {
		if errors.Is(err, crypt.ErrEncrypted) {
			return nil, Fail(fmt.Errorf("open store %s: %w", text.RedactURL(rawURL), err), EncryptedHint(err))
		}
		return nil, Fail(fmt.Errorf("open store %s: %w", text.RedactURL(rawURL), err), storeHint(rawURL, err))
	}
	return s, nil
}

// KeyHint says how to make and configure an encryption key.
const KeyHint = "set persistence.encryption_key_file or CAIRN_ENCRYPTION_KEY_FILE to a file of 32 random bytes, raw or in base64 or hex (head -c 32 /dev/urandom > cairn.key)"

// EncryptedHint says which key an encrypted namespace or session needs and
// how to configure it.
func EncryptedHint(err error) string {
	var ee *crypt.EncryptedError
	if errors.As(err, &ee) && len(ee.KeyIDs) > 0 {
		return "this namespace is encrypted: set persistence.encryption_key_file or CAIRN_ENCRYPTION_KEY_FILE to the file of key " +
			strings.Join(ee.KeyIDs, " or ") + " (docs/SECURITY.md)"
	}
	return "this session is encrypted: set persistence.encryption_key_file or CAIRN_ENCRYPTION_KEY_FILE to the file of its key (docs/SECURITY.md)"
}

// Keyring returns the keyring of the configured encryption key, or nil
// when none is configured.
func (a *App) Keyring() (*crypt.Keyring, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	path := cfg.Persistence.EncryptionKeyFile
	if path == "" {
		return nil, nil
	}
	k, err := crypt.LoadKeyFile(path)
	if err != nil {
		return nil, Fail(fmt.Errorf("encryption key: %w", err), KeyHint)
	}
	return crypt.NewKeyring(k)
}

// connectTimeout bounds how long a command waits for a store server that
// does not answer, unless its URL says otherwise.
const connectTimeout = 5 * time.Second

// withTimeouts adds to a server store's URL the timeouts that make a
// command fail within seconds when the server is down or out of reach
// (MongoDB's driver would wait 30 s for a server to select; pgx waits as
// long as the network does), unless the URL sets them.
func withTimeouts(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	var key, val string
	switch strings.ToLower(u.Scheme) {
	case "mongodb", "mongodb+srv":
		key, val = "serverSelectionTimeoutMS", strconv.Itoa(int(connectTimeout.Milliseconds()))
	case "postgres", "postgresql":
		key, val = "connect_timeout", strconv.Itoa(int(connectTimeout.Seconds()))
	default:
		return rawURL
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, key) {
			return rawURL
		}
	}
	sep := "?"
	if u.RawQuery != "" || strings.HasSuffix(rawURL, "?") {
		sep = "&"
	}
	if strings.HasSuffix(rawURL, "?") || strings.HasSuffix(rawURL, "&") {
		sep = ""
	}
	return rawURL + sep + key + "=" + val
}

func storeHint(rawURL string, err error) string {
	if errors.Is(err, cairn.ErrInvalidID) {
		return "a namespace is 1-128 characters of A-Z a-z 0-9 _ -"
	}
	scheme, _, _ := strings.Cut(rawURL, ":")
	switch {
	case errors.Is(err, cairn.ErrDamaged) && (scheme == "sqlite" || scheme == "file"):
		return "that is not a cairn store, or it is damaged: give another path, or restore it from a backup; `cairn doctor` says what is wrong"
	case errors.Is(err, os.ErrPermission):
		return "check that the path is writable by you"
	}
	switch scheme {
	case "postgres", "postgresql":
		return "is PostgreSQL running and reachable at that address? `cairn doctor` checks"
	case "redis", "rediss":
		if strings.Contains(err.Error(), "Redis Cluster node") {
			return "the URL reaches a Redis Cluster: name some of its nodes, redis://HOST:PORT?addr=HOST2:PORT2&addr=HOST3:PORT3, or add cluster=true (docs/SCALING.md)"
		}
		return "is Redis running and reachable at that address? `cairn doctor` checks"
	case "mongodb", "mongodb+srv":
		return "is the MongoDB server running and reachable at that address? `cairn doctor` checks"
	case "sqlite", "file":
		return "check the path: its folder must be writable, and the file a SQLite database (sqlite) or a folder of sessions (file)"
	}
	return "store URLs look like sqlite:///.cairn/cairn.db, file:///path, postgres://…, redis://…, mongodb://…, memory:"
}

// GlobalStoreURL returns the user-global store: CAIRN_GLOBAL_STORE, else
// SQLite in the user's data folder (~/.local/share/cairn/cairn.db).
func (a *App) GlobalStoreURL() string {
	if v := a.Getenv("CAIRN_GLOBAL_STORE"); v != "" {
		return v
	}
	dir := a.DataDir()
	if dir == "" {
		return ""
	}
	return (&url.URL{Scheme: "sqlite", Path: filepath.Join(dir, "cairn.db")}).String()
}

// DataDir returns cairn's folder in the user's data folder:
// $XDG_DATA_HOME/cairn, else ~/.local/share/cairn; "" when there is no
// home folder.
func (a *App) DataDir() string {
	dir := a.Getenv("XDG_DATA_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "cairn")
}

// Printf writes to stdout.
func (a *App) Printf(format string, args ...any) { fmt.Fprintf(a.Stdout, format, args...) }

// Warnf writes a warning to stderr, once: "warning: …", or a JSON record
// under --json.
func (a *App) Warnf(format string, args ...any) {
	a.Logger().Warn(fmt.Sprintf(format, args...))
}

// Notef writes a note for people to stderr: a line, or a JSON record
// under --json.
func (a *App) Notef(format string, args ...any) {
	if a.Flags.JSON {
		a.Logger().Info(fmt.Sprintf(format, args...))
		return
	}
	fmt.Fprintf(a.Stderr, format+"\n", args...)
}

// Interactive reports whether output for people (colour, progress,
// streaming) should be shown: stdout is a terminal.
func (a *App) Interactive() bool { return IsTerminal(a.Stdout) }
