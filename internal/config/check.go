package config

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/BurntSushi/toml"
)

// source is a config file being parsed: what it says and where.
type source struct {
	file string
	data []byte
	md   toml.MetaData
}

// set reports whether the file sets the key (dotted, such as
// "persistence.url").
func (s *source) set(key string) bool { return s.md.IsDefined(strings.Split(key, ".")...) }

// line returns the line of the file that sets key, 0 if not known.
func (s *source) line(key string) int { return keyLine(s.data, toml.Key(strings.Split(key, "."))) }

// at names a setting and its line: `persistence.url (line 3)`.
func (s *source) at(key string) string {
	if n := s.line(key); n > 0 {
		return fmt.Sprintf("%s (line %d)", key, n)
	}
	return key
}

// conflict returns the error for two settings that contradict each other,
// placed at the line of the later one.
func (s *source) conflict(a, b, msg string) *Error {
	la, lb := s.line(a), s.line(b)
	key, line := b, lb
	if la > lb {
		key, line = a, la
	}
	return &Error{File: s.file, Line: line, Key: key, Msg: msg}
}

// checkContradictions refuses settings of one file that contradict each
// other, where one would otherwise be ignored without a word: two names
// for the store, a backend that is not the store's URL's, a model name or
// server for a provider that has none.
func (c *Config) checkContradictions(s *source) error {
	p := c.Persistence
	if p.URL != "" && p.Connection != "" && s.set("persistence.url") && s.set("persistence.connection") {
		return s.conflict("persistence.url", "persistence.connection", fmt.Sprintf(
			"%s = %q and %s = %q both name the store; keep one of them",
			s.at("persistence.url"), redact(p.URL), s.at("persistence.connection"), p.Connection))
	}
	if s.set("persistence.backend") && p.Backend != "" {
		if s.set("persistence.url") {
			if b := urlBackend(p.URL); b != "" && b != p.Backend {
				return s.conflict("persistence.backend", "persistence.url", fmt.Sprintf(
					"%s = %q is a %s store, but %s = %q; remove backend (the URL says it) or make them agree",
					s.at("persistence.url"), redact(p.URL), b, s.at("persistence.backend"), p.Backend))
			}
		}
		if conn, ok := c.Connections[p.Connection]; ok && p.Connection != "" && s.set("persistence.connection") {
			if b := urlBackend(conn.URL); b != "" && b != p.Backend {
				return s.conflict("persistence.backend", "persistence.connection", fmt.Sprintf(
					"%s = %q names [connections.%s], whose url %q is a %s store, but %s = %q; remove backend or make them agree",
					s.at("persistence.connection"), p.Connection, p.Connection, redact(conn.URL), b, s.at("persistence.backend"), p.Backend))
			}
		}
	}
	if conn, ok := c.Connections[p.Connection]; ok && p.Connection != "" && s.set("persistence.connection") && conn.URL == "" {
		return &Error{File: s.file, Line: s.line("persistence.connection"), Key: "persistence.connection",
			Msg: fmt.Sprintf("names [connections.%s], which has no url", p.Connection)}
	}
	m := c.Model
	switch m.Provider {
	case "", "offline":
		if s.set("model.name") && m.Name != "" {
			return s.conflict("model.provider", "model.name", fmt.Sprintf(
				"%s = %q is set, but the provider is offline, which takes no name; set model.provider (openai, anthropic or script) or remove the name",
				s.at("model.name"), m.Name))
		}
		fallthrough
	case "script":
		if s.set("model.base_url") && m.BaseURL != "" {
			provider := m.Provider
			if provider == "" {
				provider = "offline"
			}
			return s.conflict("model.provider", "model.base_url", fmt.Sprintf(
				"%s = %q is set, but the provider is %s, which has no server; set model.provider to openai or anthropic or remove base_url",
				s.at("model.base_url"), m.BaseURL, provider))
		}
	}
	return nil
}

// normalize makes the backend follow the store URL that the file names
// without a backend, so that the configuration never holds both a URL and
// another backend.
func (c *Config) normalize(s *source) {
	if s.set("persistence.backend") {
		return
	}
	u := c.Persistence.URL
	if u == "" {
		u = c.Connections[c.Persistence.Connection].URL
	}
	if b := urlBackend(u); b != "" {
		c.Persistence.Backend = b
	}
}

// urlBackend returns the backend a store URL names, "" when it names none
// that cairn knows (opening it says so).
func urlBackend(u string) string {
	scheme, _, ok := strings.Cut(u, ":")
	if !ok {
		return ""
	}
	switch b := SchemeBackend(strings.ToLower(scheme)); b {
	case "memory", "file", "sqlite", "postgres", "redis", "mongodb":
		return b
	}
	return ""
}

// redact hides the password of a URL, for errors: "postgres://u:xxxxx@h/db".
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	auth, tail, ok := strings.Cut(rest, "@")
	if !ok || strings.ContainsAny(auth, "/?#") {
		return raw
	}
	user, _, hasPass := strings.Cut(auth, ":")
	if !hasPass {
		return raw
	}
	return scheme + "://" + user + ":xxxxx@" + tail
}
