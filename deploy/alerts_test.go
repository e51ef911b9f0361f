package deploy_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/template"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// ruleFile is Prometheus' rule file format (as model/rulefmt reads it, whose package
// would bring in the whole query engine); strict decoding refuses unknown fields.
type ruleFile struct {
	Groups []struct {
		Name     string `json:"name"`
		Interval string `json:"interval,omitempty"`
		Rules    []struct {
			Alert       string            `json:"alert,omitempty"`
			Record      string            `json:"record,omitempty"`
			Expr        string            `json:"expr"`
			For         string            `json:"for,omitempty"`
			Labels      map[string]string `json:"labels,omitempty"`
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"rules"`
	} `json:"groups"`
}

// seriesNames are the metric names sitetools exports: every "sitetools_…" string in
// its Go sources, histograms with their _bucket, _sum and _count series, and the Go
// and process collectors' families.
func seriesNames(t *testing.T) map[string]bool {
	t.Helper()
	name := regexp.MustCompile(`"(sitetools_[a-z0-9_]+)"`)
	names := map[string]bool{}
	err := filepath.WalkDir(root(t), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range name.FindAllSubmatch(b, -1) {
			n := string(m[1])
			names[n] = true
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				names[n+suffix] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !names["sitetools_http_requests_total"] {
		t.Fatal("found no metric names in the sources")
	}
	names["up"] = true
	return names
}

func TestAlertRules(t *testing.T) {
	path := filepath.Join(root(t), "deploy", "prometheus", "alerts.yaml")
	var rf ruleFile
	if err := yaml.UnmarshalStrict(readFile(t, path), &rf); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	runbook := strings.ToLower(string(readFile(t, filepath.Join(root(t), "docs", "operations.md"))))
	series := seriesNames(t)
	// Prometheus' template functions, as stubs: only the templates' syntax is checked.
	funcs := template.FuncMap{}
	for _, f := range []string{"humanize", "humanize1024", "humanizeDuration", "humanizePercentage", "humanizeTimestamp", "printf", "title", "toUpper", "toLower", "query", "first", "value", "label", "args", "safeHtml", "match", "reReplaceAll", "graphLink", "tableLink", "stripPort", "externalURL", "pathPrefix"} {
		funcs[f] = func(...any) any { return nil }
	}

	alerts := 0
	for _, g := range rf.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q has no name or no rules", g.Name)
		}
		for _, r := range g.Rules {
			alerts++
			t.Run(r.Alert, func(t *testing.T) {
				if r.Alert == "" || r.Record != "" {
					t.Fatalf("rule %q: want alerting rules only", r.Expr)
				}
				expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
				if err != nil {
					t.Fatalf("expr: %v", err)
				}
				if expr.Type() != parser.ValueTypeVector && expr.Type() != parser.ValueTypeScalar {
					t.Errorf("expr is a %s, want an instant vector", expr.Type())
				}
				parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
					if vs, ok := n.(*parser.VectorSelector); ok && !series[vs.Name] {
						t.Errorf("expr selects %q, which sitetools does not export", vs.Name)
					}
					return nil
				})
				if _, err := model.ParseDuration(r.For); err != nil {
					t.Errorf("for %q: %v", r.For, err)
				}
				if s := r.Labels["severity"]; s != "page" && s != "warn" {
					t.Errorf("severity %q, want page or warn", s)
				}
				for _, a := range []string{"summary", "description", "runbook_url"} {
					text, ok := r.Annotations[a]
					if !ok {
						t.Errorf("no %s annotation", a)
						continue
					}
					// As Prometheus expands annotations: with $labels and $value defined.
					if _, err := template.New(a).Funcs(funcs).Parse("{{$labels := .Labels}}{{$value := .Value}}" + text); err != nil {
						t.Errorf("%s: %v", a, err)
					}
				}
				// The runbook is the section of docs/operations.md named after the alert.
				anchor := strings.ToLower(r.Alert)
				if !strings.HasSuffix(r.Annotations["runbook_url"], "docs/operations.md#"+anchor) {
					t.Errorf("runbook_url %q, want docs/operations.md#%s", r.Annotations["runbook_url"], anchor)
				}
				if !regexp.MustCompile(`(?m)^#+ ` + anchor + `$`).MatchString(runbook) {
					t.Errorf("docs/operations.md has no heading %q", r.Alert)
				}
			})
		}
	}
	if alerts == 0 {
		t.Fatal("no alerts")
	}
}
