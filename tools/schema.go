package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schema is a JSON Schema (draft 2020-12 unless it says otherwise) compiled once.
type schema struct {
	raw      json.RawMessage // compact
	typ      string          // the top-level "type", if a string
	compiled *jsonschema.Schema
}

var printer = message.NewPrinter(language.English)

func compileSchema(name string, raw json.RawMessage) (*schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("missing")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("must be a JSON object")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	// Tool schemas are self-contained: no remote references are ever fetched.
	c.UseLoader(noLoader{})
	url := "sitetools:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	typ, _ := obj["type"].(string)
	return &schema{raw: buf.Bytes(), typ: typ, compiled: compiled}, nil
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references %s: external references are not allowed", url)
}

// validate returns every failure of instance, each located by a JSON pointer, in
// document order. It returns nil when instance is valid.
func (s *schema) validate(instance json.RawMessage) []Detail {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(instance))
	if err != nil {
		return []Detail{{Pointer: "", Message: "not valid JSON"}}
	}
	err = s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return []Detail{{Pointer: "", Message: err.Error()}}
	}
	var out []Detail
	collect(verr, &out)
	slices.SortStableFunc(out, func(a, b Detail) int { return strings.Compare(a.Pointer, b.Pointer) })
	return slices.Compact(out)
}

func collect(e *jsonschema.ValidationError, out *[]Detail) {
	if len(e.Causes) == 0 {
		*out = append(*out, Detail{Pointer: pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(printer)})
		return
	}
	for _, c := range e.Causes {
		collect(c, out)
	}
}

func pointer(tokens []string) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		sb.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return sb.String()
}
