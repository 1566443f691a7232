package config

import (
	"fmt"
	"os"
	"path/filepath"
)

// ProjectDir is the folder in which cairn keeps a project's sessions by
// default (.cairn/cairn.db).
const ProjectDir = ".cairn"

// Project is where a command runs: the folder of the project it belongs
// to and the config file that configures it.
type Project struct {
	// Root is the project's folder: the nearest folder, from the working
	// directory upward, that holds cairn.toml or a .cairn folder; the
	// working directory when none does (the first run creates .cairn
	// there).
	Root string
	// File is the config file: the one given, else cairn.toml in Root,
	// else the user's (~/.config/cairn/cairn.toml), else "".
	File string
	// Found reports whether Root was found (it holds cairn.toml or
	// .cairn) rather than taken as the working directory.
	Found bool
}

// FindProject looks for the project of the folder dir the way git looks
// for its repository: in dir, then in each folder above it, the first
// that holds cairn.toml or a .cairn folder is the project's root. explicit
// (--config or CAIRN_CONFIG), when given, is the config file whatever the
// folders hold; it must exist.
func FindProject(dir, explicit string) (Project, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Project{}, fmt.Errorf("working directory: %w", err)
	}
	p := Project{Root: abs}
	for d := abs; ; {
		if isFile(filepath.Join(d, FileName)) {
			p.Root, p.File, p.Found = d, filepath.Join(d, FileName), true
			break
		}
		if isDir(filepath.Join(d, ProjectDir)) {
			p.Root, p.Found = d, true
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return Project{}, fmt.Errorf("config file %s: %w", explicit, err)
		}
		p.File = explicit
		return p, nil
	}
	if p.File == "" {
		p.File = userFile()
	}
	return p, nil
}

// Find returns the config file to use: explicit if given, else cairn.toml
// in the working directory or the nearest folder above it (stopping at the
// first that holds a .cairn folder), else in the user's config folder
// (~/.config/cairn/cairn.toml), else "".
func Find(explicit string) (string, error) {
	p, err := FindProject(".", explicit)
	if err != nil {
		return "", err
	}
	return p.File, nil
}

// userFile returns the user's config file, "" when there is none.
func userFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	p := filepath.Join(dir, "cairn", FileName)
	if !isFile(p) {
		return ""
	}
	return p
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
