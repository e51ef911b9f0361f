// Package grafana holds sitetools' Grafana dashboard (sitetools.json), and reads its
// queries for the tests that keep it true to the service's metrics.
package grafana

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/promql/parser"
)

// Dashboard is sitetools.json, to import into Grafana (Dashboards → New → Import).
//
//go:embed sitetools.json
var Dashboard []byte

// Query is one panel target.
type Query struct {
	Panel string // the panel's title
	RefID string
	Expr  string
}

// board is the part of the dashboard model the checks read.
type board struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Schema     int    `json:"schemaVersion"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query string `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource *struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		GridPos struct{ H, W, X, Y int } `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// Queries checks the dashboard's structure and returns every panel query. Problems are
// reported together.
func Queries(data []byte) ([]Query, error) {
	var b board
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if b.Title == "" || b.UID == "" || b.Schema == 0 {
		add("title, uid and schemaVersion are required")
	}
	if !slices.ContainsFunc(b.Templating.List, func(v struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Query string `json:"query"`
	}) bool {
		return v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus"
	}) {
		add("no Prometheus datasource variable named datasource")
	}
	var out []Query
	ids := map[int]bool{}
	for _, p := range b.Panels {
		if p.Title == "" || ids[p.ID] || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			add("panel %d %q: needs a title, a unique id and a place in the 24-column grid", p.ID, p.Title)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			add("panel %q: datasource must be the ${datasource} variable", p.Title)
		}
		if len(p.Targets) == 0 {
			add("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, t := range p.Targets {
			if t.RefID == "" || refs[t.RefID] || t.Expr == "" {
				add("panel %q: each query needs an expression and its own refId", p.Title)
			}
			refs[t.RefID] = true
			out = append(out, Query{Panel: p.Title, RefID: t.RefID, Expr: t.Expr})
		}
	}
	if len(problems) > 0 {
		return out, fmt.Errorf("dashboard: %v", problems)
	}
	return out, nil
}

// MetricNames parses a PromQL expression and returns the metric names it selects.
func MetricNames(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && !slices.Contains(names, vs.Name) {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, nil
}
