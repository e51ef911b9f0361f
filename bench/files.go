package main

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
)

// writeDoc writes the report under the module root and returns the path written.
func writeDoc(rel, text string) (string, error) {
	path := rel
	if !filepath.IsAbs(rel) {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		path = filepath.Join(root, rel)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(docHeader+"```\n"+text+"```\n"), 0o644)
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("writeDoc: no go.mod above the working directory")
		}
		dir = parent
	}
}

func urlRedacted(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	return u.Redacted(), nil
}
