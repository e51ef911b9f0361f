package web

import (
	"encoding/json"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"
)

// The forms the pages carry (the contact form) are views of tools: declarative WebMCP
// attributes written from one tool's definition, the registry's (GET /api/chat/tools) or
// a browser-local tool's (widget/local-tools.json, the bridge's own), never by hand.
// widget/forms.js writes the same attributes on the forms the widget builds and answers
// an agent's submit of any view by running its tool.

// viewAttr names the tool a form is a view of, for widget/forms.js.
const viewAttr = "data-sitetools-tool"

// toolDef is what a form needs of a tool's definition.
type toolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// formTool is a tool as the forms that are views of it declare it.
type formTool struct {
	name, description string
	params            map[string]formParam
	required          []string
}

// formParam is what a field says of its parameter.
type formParam struct {
	Description *string `json:"description"`
	MaxLength   *int    `json:"maxLength"`
	Enum        []any   `json:"enum"`
}

// formTools are the tools a page's form may be a view of, by name: the registry's, from
// its catalog as GET /api/chat/tools serves it (nil: none), and the browser-local tools
// of names the registry has not. The registry is the contract, as for the bridge.
func formTools(catalog []byte) (map[string]*formTool, error) {
	local, err := widgetSources.ReadFile(widgetDir + "/local-tools.json")
	if err != nil {
		return nil, fmt.Errorf("web: local tools: %w", err)
	}
	out := map[string]*formTool{}
	for _, src := range []struct {
		what string
		json []byte
	}{{"local-tools.json", local}, {"the registry's catalog", catalog}} {
		if src.json == nil {
			continue
		}
		var c struct {
			Tools []toolDef `json:"tools"`
		}
		if err := json.Unmarshal(src.json, &c); err != nil {
			return nil, fmt.Errorf("web: %s: %w", src.what, err)
		}
		for _, d := range c.Tools {
			t, err := newFormTool(d)
			if err != nil {
				return nil, fmt.Errorf("web: %s: %w", src.what, err)
			}
			out[t.name] = t // the catalog, read last, wins
		}
	}
	return out, nil
}

func newFormTool(d toolDef) (*formTool, error) {
	var s struct {
		Properties map[string]formParam `json:"properties"`
		Required   []string             `json:"required"`
	}
	if err := json.Unmarshal(d.InputSchema, &s); err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", d.Name, err)
	}
	return &formTool{name: d.Name, description: d.Description, params: s.Properties, required: s.Required}, nil
}

// Attrs are a view's own attributes: toolname, tooldescription, toolautosubmit (the
// agent's submit is the tool's call, whose own gates ask the visitor where one is needed;
// see widget/forms.js), and the tool's name for forms.js.
func (t *formTool) Attrs() template.HTMLAttr {
	return attrs("toolname", t.name, "tooldescription", t.description, "toolautosubmit", "", viewAttr, t.name)
}

// Field is the attributes of the field for the tool's parameter name: its name,
// toolparamdescription, maxlength and required, as the tool's schema says. A field the
// tool has no parameter for is an error: the page is not rendered.
func (t *formTool) Field(name string) (template.HTMLAttr, error) { return t.field(name, true) }

// Choice is Field for a <select>, which has no maxlength: its options are the choice.
func (t *formTool) Choice(name string) (template.HTMLAttr, error) { return t.field(name, false) }

func (t *formTool) field(name string, text bool) (template.HTMLAttr, error) {
	p, ok := t.params[name]
	if !ok {
		return "", fmt.Errorf("a field %q, which is no parameter of %s", name, t.name)
	}
	kv := []string{"name", name}
	if p.Description != nil {
		kv = append(kv, "toolparamdescription", *p.Description)
	}
	if p.MaxLength != nil && text {
		kv = append(kv, "maxlength", strconv.Itoa(*p.MaxLength))
	}
	if slices.Contains(t.required, name) {
		kv = append(kv, "required", "")
	}
	return attrs(kv...), nil
}

// attrs writes attribute names and values (an empty value: the bare name), escaped.
func attrs(kv ...string) template.HTMLAttr {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv[i])
		if kv[i+1] != "" {
			b.WriteString(`="` + template.HTMLEscapeString(kv[i+1]) + `"`)
		}
	}
	return template.HTMLAttr(b.String())
}

// contactTool is the tool the contact form is a view of.
const contactTool = "prefill_contact_form"
