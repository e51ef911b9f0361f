package main

import (
	"cmp"
	"context"
	"io"
	"slices"
	"strings"
)

// A section is a measurement with a table of its own, beside the load scenarios: it
// runs after them (and before the HNSW recall), when -run matches its name. Files
// register theirs in an init function.
type section struct {
	name string
	// order places it among the others, lowest first: the measurement a busy database
	// would disturb most goes before the sections that leave PostgreSQL work to do
	// (autovacuum after loading 100 000 chunks).
	order int
	run   func(ctx context.Context, env sectionEnv) (sectionResult, error)
}

// sectionEnv is what a section may use: the settings, the benchmarked database's
// cluster (TEST_DATABASE_URL, where it may create databases of its own), the in-process
// service and its database, and where to write progress.
type sectionEnv struct {
	s        settings
	adminURL string
	dbURL    string
	svc      *service
	stderr   io.Writer
}

// sectionResult is a section's markdown (a heading, a table, notes) and, for -strict,
// the goals it missed.
type sectionResult struct {
	text   string
	missed []string
}

var sections []section

// runSections runs the sections -run selects, by their order.
func (b *bench) runSections(rep *report) error {
	env := sectionEnv{s: b.s, adminURL: b.adminURL, dbURL: b.dbURL, svc: b.svc, stderr: b.stderr}
	sorted := slices.Clone(sections)
	slices.SortStableFunc(sorted, func(a, b section) int { return cmp.Compare(a.order, b.order) })
	for _, sec := range sorted {
		if !b.s.run.MatchString(sec.name) {
			continue
		}
		res, err := sec.run(b.ctx, env)
		if err != nil {
			return &sectionError{sec.name, err}
		}
		rep.sections = append(rep.sections, res)
	}
	return nil
}

type sectionError struct {
	name string
	err  error
}

func (e *sectionError) Error() string { return e.name + ": " + e.err.Error() }
func (e *sectionError) Unwrap() error { return e.err }

// anySection reports whether -run selects a section.
func anySection(s settings) bool {
	for _, sec := range sections {
		if s.run.MatchString(sec.name) {
			return true
		}
	}
	return false
}

func sectionsText(b *strings.Builder, next func(), list []sectionResult) {
	for _, r := range list {
		next()
		b.WriteString(strings.TrimRight(r.text, "\n") + "\n")
	}
}

// stack is what a set-up started, to stop in reverse order.
type stack []func()

func (s *stack) push(f func()) { *s = append(*s, f) }

// run stops everything pushed, the last first.
func (s *stack) run() {
	for i := len(*s) - 1; i >= 0; i-- {
		(*s)[i]()
	}
}
