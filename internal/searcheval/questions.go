// Package searcheval measures how well the site's search finds the pages its owner
// expects: it reads the owner's questions file, scores the ranked results (hit@1, hit@3,
// MRR) overall, per label and per language, and writes the report, side by side with a
// candidate index when there is one.
package searcheval

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Question is one entry of the questions file.
type Question struct {
	Question string   `json:"question"`
	Pages    []string `json:"pages"`           // the pages that answer it: paths or URLs of this site
	Lang     string   `json:"lang,omitempty"`  // the language it is asked in; "" when not given
	Label    string   `json:"label,omitempty"` // a free label, e.g. keyword or paraphrase
	// Where names the entry in messages: "line 12".
	Where string `json:"where"`
}

// FileError lists every problem of a questions file, each with its line.
type FileError struct {
	Name     string
	Problems []string
}

func (e *FileError) Error() string {
	return fmt.Sprintf("questions file %s:\n  %s", e.Name, strings.Join(e.Problems, "\n  "))
}

// MaxQuestions bounds a file: each question is a search, and may be a provider call.
const MaxQuestions = 10_000

var langPattern = regexp.MustCompile(`^[a-z]{2}$`)

// Parse reads a questions file: YAML (a list of entries, or a mapping whose questions key
// holds it) or JSON Lines (one object a line). name chooses the format by its extension
// (.yaml, .yml, .jsonl, .ndjson); any other is told by the first character. Every problem
// is reported at once, as a *FileError.
func Parse(name string, r io.Reader) ([]Question, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var qs []Question
	var problems []string
	if isJSONL(name, b) {
		qs, problems = parseJSONL(b)
	} else {
		qs, problems = parseYAML(b)
	}
	if len(problems) == 0 && len(qs) == 0 {
		problems = append(problems, "no questions: write one entry per question, e.g.\n"+
			"    - question: How much is a day of consulting?\n      page: /pricing")
	}
	if len(qs) > MaxQuestions {
		problems = append(problems, fmt.Sprintf("%d questions; at most %d", len(qs), MaxQuestions))
	}
	if len(problems) > 0 {
		slices.SortStableFunc(problems, func(a, b string) int { return cmp.Compare(lineOf(a), lineOf(b)) })
		return nil, &FileError{Name: name, Problems: problems}
	}
	return qs, nil
}

// lineOf is the line a problem names ("line 12: …"), for listing them in order; 0 if none.
func lineOf(problem string) int {
	var n int
	_, _ = fmt.Sscanf(problem, "line %d:", &n)
	return n
}

func isJSONL(name string, b []byte) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jsonl", ".ndjson":
		return true
	case ".yaml", ".yml":
		return false
	}
	return bytes.HasPrefix(bytes.TrimSpace(b), []byte("{"))
}

// entry is an entry as written: page and pages are two spellings of one field.
type entry struct {
	Question string          `json:"question"`
	Page     json.RawMessage `json:"page"`
	Pages    json.RawMessage `json:"pages"`
	Lang     string          `json:"lang"`
	Label    string          `json:"label"`
}

// parseJSONL reads one object a line; blank lines and lines starting with # are skipped.
func parseJSONL(b []byte) (qs []Question, problems []string) {
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := fmt.Sprintf("line %d", i+1)
		var e entry
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %s (fields: question, page or pages, lang, label)", where, jsonProblem(err)))
			continue
		}
		q := Question{Question: e.Question, Lang: e.Lang, Label: e.Label, Where: where}
		ok := true
		for _, raw := range []json.RawMessage{e.Page, e.Pages} {
			pages, err := stringOrList(raw)
			if err != nil {
				problems, ok = append(problems, fmt.Sprintf("%s: page(s) must be a string or a list of strings", where)), false
			}
			q.Pages = append(q.Pages, pages...)
		}
		problems = append(problems, check(q, map[string]bool{"page": !ok})...)
		qs = append(qs, q)
	}
	return qs, problems
}

func jsonProblem(err error) string {
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typ) && typ.Field != "":
		return typ.Field + " must be text"
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	return "not a JSON object on one line: " + strings.TrimPrefix(err.Error(), "json: ")
}

func stringOrList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var list []string
	err := json.Unmarshal(raw, &list)
	return list, err
}

// parseYAML reads a list of entries, or a mapping whose questions key holds the list.
func parseYAML(b []byte) (qs []Question, problems []string) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, []string{"not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	list := doc.Content[0]
	if list.Kind == yaml.MappingNode {
		list = nil
		for i := 0; i+1 < len(doc.Content[0].Content); i += 2 {
			if k := doc.Content[0].Content[i]; k.Value == "questions" {
				list = doc.Content[0].Content[i+1]
			} else {
				problems = append(problems, fmt.Sprintf("line %d: unknown key %q at the top (the file is a list of questions, or has them under questions:)", k.Line, k.Value))
			}
		}
		if list == nil {
			return nil, problems
		}
	}
	if list.Kind != yaml.SequenceNode {
		return nil, append(problems, fmt.Sprintf("line %d: expected a list of questions, each starting with \"- question:\"", list.Line))
	}
	for _, item := range list.Content {
		q, bad, p := yamlEntry(item)
		problems = append(problems, p...)
		if q != nil {
			problems = append(problems, check(*q, bad)...)
			qs = append(qs, *q)
		}
	}
	return qs, problems
}

// yamlEntry reads one entry of the list, a mapping of question, page or pages, lang and
// label. bad names the fields of the wrong kind, whose problem is said.
func yamlEntry(item *yaml.Node) (q *Question, bad map[string]bool, problems []string) {
	where := fmt.Sprintf("line %d", item.Line)
	if item.Kind != yaml.MappingNode {
		return nil, nil, []string{where + ": expected an entry with question: and page: (or pages:)"}
	}
	q, bad = &Question{Where: where}, map[string]bool{}
	for i := 0; i+1 < len(item.Content); i += 2 {
		k, v := item.Content[i], item.Content[i+1]
		switch k.Value {
		case "question", "lang", "label":
			if v.Kind != yaml.ScalarNode {
				problems, bad[k.Value] = append(problems, fmt.Sprintf("line %d: %s must be text", v.Line, k.Value)), true
				continue
			}
			switch k.Value {
			case "question":
				q.Question = v.Value
			case "lang":
				q.Lang = v.Value
			default:
				q.Label = v.Value
			}
		case "page", "pages":
			var pages []string
			switch v.Kind {
			case yaml.ScalarNode:
				pages = []string{v.Value}
			case yaml.SequenceNode:
				if err := v.Decode(&pages); err != nil {
					problems, bad["page"] = append(problems, fmt.Sprintf("line %d: %s must be a path or a list of paths", v.Line, k.Value)), true
				}
			default:
				problems, bad["page"] = append(problems, fmt.Sprintf("line %d: %s must be a path or a list of paths", v.Line, k.Value)), true
			}
			q.Pages = append(q.Pages, pages...)
		default:
			problems = append(problems, fmt.Sprintf("line %d: unknown field %q (fields: question, page or pages, lang, label)", k.Line, k.Value))
		}
	}
	return q, bad, problems
}

// check returns what is wrong with a question read without a syntax error; bad names
// fields whose problem is already said.
func check(q Question, bad map[string]bool) []string {
	var problems []string
	if strings.TrimSpace(q.Question) == "" && !bad["question"] {
		problems = append(problems, q.Where+": no question (question: as a visitor would ask it)")
	}
	if len(q.Pages) == 0 && !bad["page"] {
		problems = append(problems, q.Where+": no page (page: the path of the page that answers it, e.g. /pricing)")
	}
	for _, p := range q.Pages {
		if !isPage(p) {
			problems = append(problems, fmt.Sprintf("%s: page %q is neither a path starting with / nor an http(s) URL", q.Where, p))
		}
	}
	if q.Lang != "" && !bad["lang"] && !langPattern.MatchString(q.Lang) {
		problems = append(problems, fmt.Sprintf("%s: lang %q is not a two-letter language code such as en or de", q.Where, q.Lang))
	}
	return problems
}

func isPage(p string) bool {
	if strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "//") {
		return true
	}
	u, err := url.Parse(p)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// PagePath is the path a page is compared by: of a URL or a path, without query or
// fragment, and without a trailing slash except for the root ("/services/" and
// "/services" are one page).
func PagePath(p string) string {
	if u, err := url.Parse(strings.TrimSpace(p)); err == nil {
		p = u.Path
	}
	if p == "" {
		return "/"
	}
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}
