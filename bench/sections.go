package main

import (
	"context"
	"io"
	"strings"
)

// A section is a measurement with a table of its own, beside the load scenarios: it
// runs after them (and before the HNSW recall), when -run matches its name.
type section struct {
	name string
	run  func(ctx context.Context, env sectionEnv) (sectionResult, error)
}

// sections run in this order: the measurements a busy database would disturb most go
// before the sections that leave PostgreSQL work to do (autovacuum after loading
// 100 000 chunks).
var sections = []section{
	{name: wrkName, run: runWrk},
	{name: ttftName, run: runTTFT},
	{name: flightName, run: runFlight},
	{name: scaleIngestName, run: runScaleIngest},
	{name: scaleSearchName, run: runScaleSearch},
	{name: upkeepName, run: runUpkeep},
	// Last: it loads a database of its own (dropped after) and runs serve as a process.
	{name: largeSiteName, run: runLargeSite},
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

// runSections runs the sections -run selects, in order.
func (b *bench) runSections(rep *report) error {
	env := sectionEnv{s: b.s, adminURL: b.adminURL, dbURL: b.dbURL, svc: b.svc, stderr: b.stderr}
	for _, sec := range sections {
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
