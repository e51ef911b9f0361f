package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// formProblems is where the forms of a rendered page and the tools they are views of
// differ: name, description, fields and their constraints. A form that is no view must say
// it is none (data-sitetools-no-tool), so that a new form cannot go undecided.
func formProblems(page []byte, tools map[string]*formTool) ([]string, int, error) {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil, 0, err
	}
	var problems []string
	views := 0
	for form := range doc.Descendants() {
		if form.Type != html.ElementNode || form.Data != "form" {
			continue
		}
		a := attrMap(form)
		name, declared := a["toolname"]
		if !declared {
			if _, ok := a["data-sitetools-no-tool"]; !ok {
				problems = append(problems, fmt.Sprintf("form #%s is neither a view of a tool nor marked as none", a["id"]))
			}
			continue
		}
		views++
		t := tools[name]
		if t == nil {
			problems = append(problems, fmt.Sprintf("form #%s: no tool %q", a["id"], name))
			continue
		}
		problems = append(problems, viewProblems(form, a, t)...)
	}
	return problems, views, nil
}

func viewProblems(form *html.Node, a map[string]string, t *formTool) []string {
	var out []string
	want := map[string]string{"tooldescription": t.description, "data-sitetools-tool": t.name, "toolautosubmit": ""}
	for k, v := range want {
		if got, ok := a[k]; !ok || got != v {
			out = append(out, fmt.Sprintf("%s: %s is %q, the tool's %q", t.name, k, got, v))
		}
	}
	fields := map[string]bool{}
	for el := range form.Descendants() {
		f := attrMap(el)
		if el.Type != html.ElementNode || !slices.Contains([]string{"input", "select", "textarea"}, el.Data) || f["name"] == "" ||
			slices.Contains([]string{"submit", "button", "reset", "image"}, f["type"]) {
			continue
		}
		fields[f["name"]] = true
		out = append(out, fieldProblems(el, f, t)...)
	}
	for _, r := range t.required {
		if !fields[r] {
			out = append(out, fmt.Sprintf("%s needs %q; the form has no such field", t.name, r))
		}
	}
	return out
}

func fieldProblems(el *html.Node, f map[string]string, t *formTool) []string {
	name := f["name"]
	p, ok := t.params[name]
	if !ok {
		return []string{fmt.Sprintf("%s: the field %q is no parameter", t.name, name)}
	}
	var out []string
	check := func(attr string, want *string) {
		got, has := f[attr]
		if (want == nil) != !has || want != nil && got != *want {
			out = append(out, fmt.Sprintf("%s.%s: %s is %q (present %v), the tool's %v", t.name, name, attr, got, has, deref(want)))
		}
	}
	check("toolparamdescription", p.Description)
	var maxLength, required *string
	if p.MaxLength != nil && el.Data != "select" {
		maxLength = ptr(strconv.Itoa(*p.MaxLength))
	}
	if slices.Contains(t.required, name) {
		required = ptr("")
	}
	check("maxlength", maxLength)
	check("required", required)
	if el.Data == "select" && p.Enum != nil {
		for o := range el.Descendants() {
			if o.Type == html.ElementNode && o.Data == "option" {
				v, ok := attrMap(o)["value"]
				if !ok && o.FirstChild != nil {
					v = o.FirstChild.Data
				}
				if v != "" && !slices.Contains(p.Enum, any(v)) {
					out = append(out, fmt.Sprintf("%s.%s: the option %q is not one of the tool's", t.name, name, v))
				}
			}
		}
	}
	return out
}

func attrMap(n *html.Node) map[string]string {
	m := map[string]string{}
	for _, a := range n.Attr {
		m[a.Key] = a.Val
	}
	return m
}

func ptr(s string) *string { return &s }

func deref(s *string) any {
	if s == nil {
		return "(none)"
	}
	return *s
}

// TestDemoFormsAreViews: every form of every demo page is a view of its tool, attribute
// for attribute, or says it is none; the contact pages' forms are views of
// prefill_contact_form.
func TestDemoFormsAreViews(t *testing.T) {
	s, err := New(Options{PagesDir: filepath.Join("..", "..", "deploy", "demo", "site"), WidgetPath: os.DevNull})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, p := range s.PagePaths() {
		page, _ := s.Page(p)
		problems, views, err := formProblems(page.Body, s.forms)
		if err != nil {
			t.Fatal(err)
		}
		total += views
		for _, pr := range problems {
			t.Errorf("%s: %s", p, pr)
		}
		if strings.HasSuffix(p, "/contact") && views != 1 {
			t.Errorf("%s: %d views of a tool, want the contact form", p, views)
		}
	}
	if total < 2 {
		t.Errorf("%d forms are views of a tool in the demo; want the two contact forms at least", total)
	}
}

// TestFormsFollowTheRegistry: the contact form's attributes are the tool's, whatever the
// tool says: a registry tool of its name takes the browser-local one's place, and every
// change of it shows; a field the tool has no parameter for stops the site.
func TestFormsFollowTheRegistry(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"index.md":   "# Home\n\nWelcome.\n",
		"contact.md": "---\ntitle: Contact\ntopics: [Alpha, Beta]\n---\n\n# Contact\n\nWrite to us.\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	local, err := formTools(nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := catalogWith(t, map[string]any{
		"name": "prefill_contact_form", "description": "Changed: a registry's own contact tool & <its> \"words\".",
		"inputSchema": map[string]any{"type": "object", "required": []string{"message"}, "properties": map[string]any{
			"name":  map[string]any{"type": "string", "maxLength": 80, "description": "Changed: the name."},
			"email": map[string]any{"type": "string"}, "organisation": map[string]any{"type": "string"},
			"topic":   map[string]any{"type": "string", "enum": []string{"Alpha", "Beta"}},
			"message": map[string]any{"type": "string", "maxLength": 500, "description": "Changed: the message."},
		}},
	})
	for _, tc := range []struct {
		name    string
		catalog []byte
		want    map[string]string // attribute snippets the page must carry
	}{
		{"browser-local", nil, map[string]string{
			"tooldescription": `tooldescription="` + template.HTMLEscapeString(local[contactTool].description) + `"`,
			"name":            `name="name" toolparamdescription="` + template.HTMLEscapeString(*local[contactTool].params["name"].Description) + `" maxlength="200"`,
		}},
		{"the registry's", changed, map[string]string{
			"tooldescription": `tooldescription="Changed: a registry&#39;s own contact tool &amp; &lt;its&gt; &#34;words&#34;."`,
			"name":            `name="name" toolparamdescription="Changed: the name." maxlength="80"`,
			"message":         `name="message" toolparamdescription="Changed: the message." maxlength="500" required`,
			"email":           `name="email" type="email"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Options{PagesDir: dir, WidgetPath: os.DevNull, Catalog: tc.catalog})
			if err != nil {
				t.Fatal(err)
			}
			page, _ := s.Page("/contact")
			for what, w := range tc.want {
				if !bytes.Contains(page.Body, []byte(w)) {
					t.Errorf("%s: the page lacks %s", what, w)
				}
			}
			problems, views, err := formProblems(page.Body, s.forms)
			if err != nil || views != 1 || len(problems) > 0 {
				t.Fatalf("views %d, err %v, problems %q", views, err, problems)
			}
			// The check itself: a form that says something else than its tool fails it.
			for _, bad := range []struct{ from, to string }{
				{`toolname="prefill_contact_form" tooldescription="`, `toolname="prefill_contact_form" tooldescription="Other words. `},
				{`name="organisation"`, `name="company"`},
				{`name="email"`, `name="email" required`},
				{`maxlength="`, `maxlength="9`},
			} {
				altered := bytes.Replace(page.Body, []byte(bad.from), []byte(bad.to), 1)
				if problems, _, _ := formProblems(altered, s.forms); len(problems) == 0 {
					t.Errorf("a form with %s instead of %s passes the check", bad.to, bad.from)
				}
			}
		})
	}

	noOrganisation := catalogWith(t, map[string]any{
		"name": "prefill_contact_form", "description": "Without organisation.",
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
	})
	if _, err := New(Options{PagesDir: dir, WidgetPath: os.DevNull, Catalog: noOrganisation}); err == nil || !strings.Contains(err.Error(), `"email", which is no parameter of prefill_contact_form`) {
		t.Errorf("a contact form with fields its tool lacks: %v", err)
	}
}

func catalogWith(t *testing.T, tools ...map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"tools": tools})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
