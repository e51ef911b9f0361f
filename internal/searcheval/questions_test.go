package searcheval_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/internal/searcheval"
)

func TestParse(t *testing.T) {
	want := []searcheval.Question{
		{Question: "day rate", Pages: []string{"/pricing"}, Lang: "en", Label: "keyword", Where: "line 1"},
		{Question: "Wo ist das Büro?", Pages: []string{"/de/contact", "https://example.com/contact"}, Lang: "de", Where: "line 5"},
	}
	for _, tc := range []struct{ name, text, where1, where2 string }{
		{"q.yaml", "- question: day rate\n  page: /pricing\n  lang: en\n  label: keyword\n- question: Wo ist das Büro?\n  pages: [/de/contact, https://example.com/contact]\n  lang: de\n", "line 1", "line 5"},
		// The list under a questions key; a file named otherwise is told by its first character.
		{"questions.txt", "questions:\n- question: day rate\n  page: /pricing\n  lang: en\n  label: keyword\n- question: Wo ist das Büro?\n  pages:\n    - /de/contact\n    - https://example.com/contact\n  lang: de\n", "line 2", "line 6"},
		{"q.jsonl", `{"question": "day rate", "page": "/pricing", "lang": "en", "label": "keyword"}` + "\n\n# German\n" +
			`{"question": "Wo ist das Büro?", "pages": ["/de/contact", "https://example.com/contact"], "lang": "de"}`, "line 1", "line 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := searcheval.Parse(tc.name, strings.NewReader(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			w := []searcheval.Question{want[0], want[1]}
			w[0].Where, w[1].Where = tc.where1, tc.where2
			if d := cmp.Diff(w, got); d != "" {
				t.Error(d)
			}
		})
	}
}

// TestParseProblems: every problem of a file is reported at once, each with its line.
func TestParseProblems(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"q.yaml", "", []string{"no questions"}},
		{"q.yaml", "- question: [a\n", []string{"not valid YAML"}},
		{"q.yaml", "question: a\npage: /b\n", []string{`line 1: unknown key "question" at the top`, `line 2: unknown key "page" at the top`}},
		{"q.yaml", "questions: 3\n", []string{"line 1: expected a list of questions"}},
		{"q.yaml", "- just a string\n", []string{"line 1: expected an entry with question:"}},
		{"q.yaml", "- question: a\n  page: pricing\n- page: /x\n- question: c\n  page: {a: b}\n  lang: EN\n  labels: x\n",
			// A problem of a field's content names the entry's line, one of its kind the field's.
			[]string{`line 1: page "pricing" is neither a path`, "line 3: no question", `line 4: lang "EN" is not a two-letter language code`,
				"line 5: page must be a path or a list of paths", `line 7: unknown field "labels"`}},
		{"q.yaml", "- question: {a: b}\n  page: /x\n", []string{"line 1: question must be text"}},
		{"q.jsonl", "{\"question\": \"a\"\n{\"question\": \"b\", \"page\": 3}\n{\"question\": \"c\", \"page\": \"/c\", \"kind\": \"x\"}\n",
			[]string{"line 1: not a JSON object on one line", "line 2: page(s) must be a string or a list of strings", `line 3: unknown field "kind"`}},
		{"q.jsonl", `{"question": 3, "page": "/a", "lang": "en"}` + "\n" + `{"question": "b", "page": "/b", "lang": "english"}`,
			[]string{"line 1: question must be text", `line 2: lang "english" is not a two-letter language code`}},
	} {
		_, err := searcheval.Parse(tc.name, strings.NewReader(tc.text))
		fe, ok := errors.AsType[*searcheval.FileError](err)
		if !ok {
			t.Errorf("%q: err %v, want a *FileError", tc.text, err)
			continue
		}
		if len(fe.Problems) != len(tc.want) {
			t.Errorf("%q: problems %q, want %d", tc.text, fe.Problems, len(tc.want))
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %q does not say %q", tc.text, err, w)
			}
		}
	}
}

// TestDemoFile: the demo's questions file parses, every entry has a label and a language.
func TestDemoFile(t *testing.T) {
	f, err := os.Open("../../deploy/demo/eval.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	qs, err := searcheval.Parse(f.Name(), f)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Label == "" || q.Lang == "" {
			t.Errorf("%s: label %q, lang %q", q.Where, q.Label, q.Lang)
		}
	}
}

func TestPagePath(t *testing.T) {
	for in, want := range map[string]string{
		"/services/": "/services", "/services": "/services", "https://example.com/services/#x": "/services",
		"/": "/", "https://example.com": "/", "/pricing?a=1": "/pricing",
	} {
		if got := searcheval.PagePath(in); got != want {
			t.Errorf("PagePath(%q) = %q, want %q", in, got, want)
		}
	}
}
