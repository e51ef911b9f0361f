// Package arch_test keeps the shape of the code that docs/architecture.md describes: which
// package may import which, and how large a file and a function may grow.
package arch_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/sitetools/sitetools"

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// goFile is one parsed Go file of the repository, deploy/'s module included (node_modules
// and dot folders are left out).
type goFile struct {
	rel  string // slash path from the repository root
	pkg  string // the package's import path below the module, "." for the root
	test bool
	fset *token.FileSet
	ast  *ast.File
}

func goFiles(t *testing.T) []goFile {
	t.Helper()
	root := repoRoot()
	var out []goFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "node_modules" || name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if full, err := parser.ParseFile(fset, path, nil, 0); err == nil {
			f.Decls = full.Decls
		}
		out = append(out, goFile{rel: rel, pkg: filepath.ToSlash(filepath.Dir(rel)), test: strings.HasSuffix(name, "_test.go"), fset: fset, ast: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 50 {
		t.Fatalf("found %d Go files; is the root right?", len(out))
	}
	return out
}

// imports returns the module's own packages a file imports, as paths below the
// module ("internal/postgres"), and the others in full.
func imports(f goFile) (own, other []string) {
	for _, spec := range f.ast.Imports {
		p, _ := strconv.Unquote(spec.Path.Value)
		if rest, ok := strings.CutPrefix(p, module+"/"); ok {
			own = append(own, rest)
		} else {
			other = append(other, p)
		}
	}
	return own, other
}

func under(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

// TestImportDirection: the dependencies point one way, from the command line to the
// HTTP application to the tools and the storage, never back (docs/architecture.md).
func TestImportDirection(t *testing.T) {
	type rule struct {
		from, to string // package prefixes
		why      string
	}
	forbidden := []rule{
		{"tools", "server", "tools know nothing of HTTP"},
		{"tools", "github.com/labstack/echo/v4", "tools know nothing of HTTP"},
		{"tools", "internal/app", "the composition root builds tools, not the other way"},
		{"tools", "internal/cli", "the command line is the outermost layer"},
		{"tools", "internal/assistant", "the chat uses tools, not the other way"},
		{"internal/llm", "server", "the provider clients are leaves"},
		{"internal/llm", "tools", "the provider clients are leaves"},
		{"internal/llm", "internal/postgres", "the provider clients are leaves"},
		{"internal/fetch", "", "the outbound client is a leaf"},
		{"internal/pdftext", "", "the PDF reader is a leaf: it knows nothing of pages or search"},
		{"internal/config", "server", "the configuration knows nothing of what it configures"},
		{"server/web", "github.com/labstack/echo/v4", "the site is rendered without the HTTP framework; server serves it"},
		{"server/web", "internal/app", "the site needs nothing of the service but how pages are read"},
		{"server/web", "internal/postgres", "the site needs nothing of the service but how pages are read"},
		{"server/web", "internal/llm", "the site needs nothing of the service but how pages are read"},
		{"server/web", "tools", "the site reads pages with internal/content, not through the search tool"},
		{"internal/content", "tools", "reading pages knows nothing of search"},
		{"internal/content", "internal/postgres", "reading pages knows nothing of storage"},
		{"internal/config", "internal/postgres", "the configuration knows nothing of what it configures"},
		{"internal/config", "tools", "the configuration knows nothing of what it configures"},
		{"internal/postgres", "server", "storage knows nothing of HTTP"},
		{"internal/postgres", "internal/app", "storage is built by the root"},
		{"internal/budget", "server", "the budgets know nothing of HTTP"},
		{"internal/embedcache", "server", "the embedding cache knows nothing of HTTP"},
		{"internal/assistant", "server", "the chat loop knows nothing of HTTP"},
		{"internal/assistant", "internal/postgres", "the chat loop reaches storage through its ledger and budget"},
		{"tools", "internal/postgres", "tools declare the storage they need; internal/postgres implements it"},
		{"server", "internal/app", "the root builds the HTTP application, not the other way"},
		{"server", "internal/budget", "the root wires the budgets; server attaches routes to what it is given"},
		{"server", "internal/llm", "the root wires the providers; server attaches routes to what it is given"},
		{"server", "internal/cli", "the command line is the outermost layer"},
		{"internal/app", "internal/cli", "the command line is the outermost layer"},
	}
	for _, f := range goFiles(t) {
		if f.test {
			continue
		}
		own, other := imports(f)
		for _, r := range forbidden {
			if !under(f.pkg, r.from) {
				continue
			}
			for _, imp := range own {
				if r.to == "" && !under(imp, f.pkg) || r.to != "" && under(imp, r.to) {
					t.Errorf("%s imports %s: %s", f.rel, imp, r.why)
				}
			}
			for _, imp := range other {
				if r.to != "" && r.to == imp {
					t.Errorf("%s imports %s: %s", f.rel, imp, r.why)
				}
			}
		}
		// Only the command line builds the service from main, and only the command line,
		// the bench and the tests' apptest use the root.
		for _, imp := range own {
			if imp == "internal/cli" && f.pkg != "." {
				t.Errorf("%s imports internal/cli: only main does", f.rel)
			}
			if imp == "internal/testkit" && !strings.HasSuffix(f.pkg, "test") {
				t.Errorf("%s imports internal/testkit: only tests and test-support packages (…test) do", f.rel)
			}
			if imp == "internal/app" && !slices.Contains([]string{"internal/cli", "bench", "internal/app/apptest"}, f.pkg) {
				t.Errorf("%s imports internal/app: only the command line, the bench and the tests' apptest build the service", f.rel)
			}
		}
	}
}

// TestSizes: no non-test Go file is over 500 lines, and no function over 80 lines of code
// (lines inside composite literals, which hold table data, do not count; a function
// literal counts with the function it is in, and on its own).
func TestSizes(t *testing.T) {
	for _, f := range goFiles(t) {
		if !f.test {
			if n := f.fset.Position(f.ast.End()).Line; n > 500 {
				t.Errorf("%s has %d lines; at most 500: split it by what its parts do", f.rel, n)
			}
		}
		for _, d := range f.ast.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if n := codeLines(f.fset, fn.Body); n > 80 {
				t.Errorf("%s: %s has %d lines of code; at most 80: give its steps names", f.rel, fn.Name.Name, n)
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if lit, ok := n.(*ast.FuncLit); ok {
					if lines := codeLines(f.fset, lit.Body); lines > 80 {
						t.Errorf("%s: a function literal in %s has %d lines of code; at most 80", f.rel, fn.Name.Name, lines)
					}
				}
				return true
			})
		}
	}
}

// codeLines counts a function body's lines, less those inside composite literals.
func codeLines(fset *token.FileSet, body *ast.BlockStmt) int {
	table := map[int]bool{}
	ast.Inspect(body, func(m ast.Node) bool {
		if cl, ok := m.(*ast.CompositeLit); ok {
			for i := fset.Position(cl.Lbrace).Line + 1; i < fset.Position(cl.Rbrace).Line; i++ {
				table[i] = true
			}
			return false
		}
		return true
	})
	return fset.Position(body.Rbrace).Line - fset.Position(body.Lbrace).Line + 1 - len(table)
}
