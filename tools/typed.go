package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// Typed returns t with a handler that takes typed input and gives typed output, as the
// official MCP Go SDK's AddTool does: the arguments (already validated against the input
// schema) are decoded into In, and a value of Out becomes the structured result.
//
// The input and output schemas are derived from In and Out with
// github.com/google/jsonschema-go (field names from json tags, omitempty fields optional,
// no additional properties) unless t gives them: a hand-written schema, with the bounds
// and descriptions a model reads, overrides the derived one. t.Handler is ignored.
//
// h returns Fail(...) for a failure the calling model should read and act on (a result
// with isError), and any other error for a failed call.
func Typed[In, Out any](t Tool, h func(ctx context.Context, in In) (Out, error)) (Tool, error) {
	if t.InputSchema == nil {
		s, err := schemaFor[In]()
		if err != nil {
			return Tool{}, fmt.Errorf("tools.Typed %s: input schema: %w", t.Name, err)
		}
		t.InputSchema = s
	}
	if t.OutputSchema == nil {
		s, err := schemaFor[Out]()
		if err != nil {
			return Tool{}, fmt.Errorf("tools.Typed %s: output schema: %w", t.Name, err)
		}
		t.OutputSchema = s
	}
	t.Handler = func(ctx context.Context, args json.RawMessage) (*Result, error) {
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, Internal(fmt.Errorf("%s: decoding validated arguments: %w", t.Name, err))
		}
		out, err := h(ctx, in)
		if f, ok := errors.AsType[*failure](err); ok {
			return &Result{Content: []Content{{Type: "text", Text: f.msg}}, IsError: true}, nil
		}
		if err != nil {
			return nil, err
		}
		return StructuredResult(out)
	}
	return t, nil
}

func schemaFor[T any]() (json.RawMessage, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// Fail is what a typed handler returns for a failure the calling model should read and
// act on, such as an unknown page or a malformed date: the call succeeds with a result
// whose isError is set and whose text is the message.
func Fail(format string, args ...any) error {
	return &failure{msg: fmt.Sprintf(format, args...)}
}

type failure struct{ msg string }

func (f *failure) Error() string { return f.msg }
