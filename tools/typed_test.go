package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/tools"
)

type greetIn struct {
	Name  string `json:"name"`
	Times int    `json:"times,omitempty"`
}

type greetOut struct {
	Text string `json:"text"`
}

// TestTyped: schemas derived from the types hold the registry's validation, the handler
// gets typed input, Fail becomes a tool error and other errors fail the call.
func TestTyped(t *testing.T) {
	boom := errors.New("boom")
	tool, err := tools.Typed(tools.Tool{Name: "greet", Description: "Greets."}, func(_ context.Context, in greetIn) (greetOut, error) {
		switch in.Name {
		case "":
			return greetOut{}, tools.Fail("say whom to greet")
		case "crash":
			return greetOut{}, boom
		}
		return greetOut{Text: strings.Repeat("hello "+in.Name+" ", max(in.Times, 1))}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Required             []string `json:"required"`
		AdditionalProperties any      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || len(schema.Required) != 1 || schema.Required[0] != "name" {
		t.Fatalf("derived input schema %s: %v", tool.InputSchema, err)
	}
	r := tools.NewRegistry(nil)
	r.MustAdd(tool)
	ctx := context.Background()

	res, err := r.Call(ctx, "greet", json.RawMessage(`{"name":"Ada","times":2}`))
	if err != nil || res.IsError || !strings.Contains(res.Content[0].Text, `"hello Ada hello Ada `) {
		t.Fatalf("typed call: %+v, %v", res, err)
	}
	if _, err := r.Call(ctx, "greet", json.RawMessage(`{"name":"Ada","extra":1}`)); tools.ErrorCode(err) != tools.CodeInvalidArguments {
		t.Errorf("an unknown property: %v; want invalid_arguments from the derived schema", err)
	}
	if _, err := r.Call(ctx, "greet", json.RawMessage(`{"times":1}`)); tools.ErrorCode(err) != tools.CodeInvalidArguments {
		t.Errorf("a missing required property: %v; want invalid_arguments", err)
	}
	res, err = r.Call(ctx, "greet", json.RawMessage(`{"name":""}`))
	if err != nil || !res.IsError || res.Content[0].Text != "say whom to greet" {
		t.Errorf("Fail: %+v, %v; want a tool error with the message", res, err)
	}
	if _, err := r.Call(ctx, "greet", json.RawMessage(`{"name":"crash"}`)); tools.ErrorCode(err) != tools.CodeInternal {
		t.Errorf("another error: %v; want the call to fail (internal)", err)
	}
}

// TestTypedKeepsGivenSchemas: a hand-written schema, with the bounds and descriptions a
// model reads, is published as it is.
func TestTypedKeepsGivenSchemas(t *testing.T) {
	in := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","maxLength":5}},"required":["name"],"additionalProperties":false}`)
	tool, err := tools.Typed(tools.Tool{Name: "greet", Description: "Greets.", InputSchema: in}, func(context.Context, greetIn) (greetOut, error) {
		return greetOut{}, nil
	})
	if err != nil || string(tool.InputSchema) != string(in) || tool.OutputSchema == nil {
		t.Fatalf("schemas %s / %s, %v", tool.InputSchema, tool.OutputSchema, err)
	}
}
