package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/tools"
)

func okHandler(context.Context, json.RawMessage) (*tools.Result, error) {
	return tools.TextResult("ok"), nil
}

func TestAddRejectsBadTools(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	for _, tc := range []struct {
		name string
		tool tools.Tool
		want string
	}{
		{"empty name", tools.Tool{Description: "d", InputSchema: obj, Handler: okHandler}, "invalid tool name"},
		{"name with space", tools.Tool{Name: "a b", Description: "d", InputSchema: obj, Handler: okHandler}, "invalid tool name"},
		{"name too long", tools.Tool{Name: strings.Repeat("a", 129), Description: "d", InputSchema: obj, Handler: okHandler}, "invalid tool name"},
		{"no description", tools.Tool{Name: "a", InputSchema: obj, Handler: okHandler}, "description is required"},
		{"no handler", tools.Tool{Name: "a", Description: "d", InputSchema: obj}, "handler is required"},
		{"no schema", tools.Tool{Name: "a", Description: "d", Handler: okHandler}, "input schema: missing"},
		{"schema not JSON", tools.Tool{Name: "a", Description: "d", InputSchema: json.RawMessage(`{`), Handler: okHandler}, "not JSON"},
		{"schema an array", tools.Tool{Name: "a", Description: "d", InputSchema: json.RawMessage(`[]`), Handler: okHandler}, "must be a JSON object"},
		{"schema not type object", tools.Tool{Name: "a", Description: "d", InputSchema: json.RawMessage(`{"type":"string"}`), Handler: okHandler}, `must have "type": "object"`},
		{"schema invalid", tools.Tool{Name: "a", Description: "d", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"bogus"}}}`), Handler: okHandler}, "input schema"},
		{"remote ref", tools.Tool{Name: "a", Description: "d", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"https://example.com/s.json"}}}`), Handler: okHandler}, "external references are not allowed"},
		{"bad output schema", tools.Tool{Name: "a", Description: "d", InputSchema: obj, OutputSchema: json.RawMessage(`{"type":"array"}`), Handler: okHandler}, "output schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tools.NewRegistry(nil).Add(tc.tool)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Add() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestAddRejectsDuplicate(t *testing.T) {
	r := tools.NewRegistry(nil)
	tool := tools.Tool{Name: "a", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`), Handler: okHandler}
	if err := r.Add(tool); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(tool); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("second Add() = %v, want duplicate error", err)
	}
}

func TestCatalogIsSortedStableAndFollowsChanges(t *testing.T) {
	r := tools.NewRegistry(nil)
	for _, n := range []string{"zeta", "alpha", "mid.dle"} {
		r.MustAdd(tools.Tool{Name: n, Description: n + " tool", InputSchema: json.RawMessage(`{ "type" : "object" }`), Handler: okHandler})
	}
	c1 := r.Catalog()
	var names []string
	for _, d := range c1.Definitions {
		names = append(names, d.Name)
	}
	if diff := cmp.Diff([]string{"alpha", "mid.dle", "zeta"}, names); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(c1.JSON), `"inputSchema":{"type":"object"}`) {
		t.Fatalf("schema not compacted in %s", c1.JSON)
	}
	if c2 := r.Catalog(); string(c2.JSON) != string(c1.JSON) || c2.ETag != c1.ETag {
		t.Fatal("catalog changed without a change to the registry")
	}
	r.MustAdd(tools.Tool{Name: "beta", Description: "b", InputSchema: json.RawMessage(`{"type":"object"}`), Handler: okHandler})
	if c3 := r.Catalog(); c3.ETag == c1.ETag || len(c3.Definitions) != 4 {
		t.Fatalf("catalog did not follow the new tool: %d tools, same etag %v", len(c3.Definitions), c3.ETag == c1.ETag)
	}
}

func TestCall(t *testing.T) {
	r := tools.NewRegistry(&tools.Options{DefaultTimeout: time.Second})
	r.MustAdd(tools.Tool{
		Name:         "greet",
		Description:  "greets",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","maxLength":5},"times":{"type":"integer","minimum":1}},"required":["name"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"greeting":{"type":"string"}},"required":["greeting"],"additionalProperties":false}`),
		Handler: func(_ context.Context, args json.RawMessage) (*tools.Result, error) {
			var in struct{ Name string }
			_ = json.Unmarshal(args, &in)
			if in.Name == "bad" {
				return &tools.Result{StructuredContent: map[string]any{"secret": "x"}}, nil
			}
			return tools.StructuredResult(map[string]string{"greeting": "hi " + in.Name})
		},
	})
	r.MustAdd(tools.Tool{Name: "boom", Description: "panics", InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, json.RawMessage) (*tools.Result, error) { panic("kaboom") }})
	r.MustAdd(tools.Tool{Name: "slow", Description: "waits", InputSchema: json.RawMessage(`{"type":"object"}`), Timeout: 20 * time.Millisecond,
		Handler: func(ctx context.Context, _ json.RawMessage) (*tools.Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}})

	for _, tc := range []struct {
		name, tool, args string
		wantCode         string
		wantDetails      []tools.Detail
		wantText         string
		wantIsError      bool
	}{
		{name: "ok", tool: "greet", args: `{"name":"ann"}`, wantText: `{"greeting":"hi ann"}`},
		{name: "null arguments are none", tool: "boom", args: `null`, wantCode: tools.CodeInternal},
		{name: "unknown tool", tool: "nope", args: `{}`, wantCode: tools.CodeUnknownTool},
		{name: "arguments not an object", tool: "greet", args: `[1]`, wantCode: tools.CodeMalformedRequest},
		{name: "missing required", tool: "greet", args: `{}`, wantCode: tools.CodeInvalidArguments,
			wantDetails: []tools.Detail{{Pointer: "", Message: "missing property 'name'"}}},
		{name: "every failure reported", tool: "greet", args: `{"name":"toolongname","times":0,"extra":1}`, wantCode: tools.CodeInvalidArguments,
			wantDetails: []tools.Detail{
				{Pointer: "", Message: "additional properties 'extra' not allowed"},
				{Pointer: "/name", Message: "maxLength: got 11, want 5"},
				{Pointer: "/times", Message: "minimum: got 0, want 1"},
			}},
		{name: "wrong type", tool: "greet", args: `{"name":5}`, wantCode: tools.CodeInvalidArguments,
			wantDetails: []tools.Detail{{Pointer: "/name", Message: "got number, want string"}}},
		{name: "panic is internal", tool: "boom", args: `{}`, wantCode: tools.CodeInternal},
		{name: "output violating its schema is internal", tool: "greet", args: `{"name":"bad"}`, wantCode: tools.CodeInternal},
		{name: "deadline is a tool error", tool: "slow", args: `{}`, wantIsError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := r.Call(context.Background(), tc.tool, json.RawMessage(tc.args))
			if tc.wantCode != "" {
				var e *tools.Error
				if !errors.As(err, &e) || e.Code != tc.wantCode {
					t.Fatalf("Call() error = %v, want code %s", err, tc.wantCode)
				}
				if tc.wantDetails != nil {
					if diff := cmp.Diff(tc.wantDetails, e.Details); diff != "" {
						t.Fatalf("details (-want +got):\n%s", diff)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Call() error = %v", err)
			}
			if res.IsError != tc.wantIsError {
				t.Fatalf("IsError = %v, want %v (%+v)", res.IsError, tc.wantIsError, res)
			}
			if tc.wantText != "" && (len(res.Content) != 1 || res.Content[0].Text != tc.wantText) {
				t.Fatalf("content = %+v, want text %s", res.Content, tc.wantText)
			}
		})
	}
}

func TestInterceptorsRunInOrderAroundValidation(t *testing.T) {
	var trace []string
	mk := func(name string) tools.Interceptor {
		return func(ctx context.Context, call *tools.Call, next tools.Invoker) (*tools.Result, error) {
			trace = append(trace, name+">"+string(tools.RequestFrom(ctx).Channel))
			res, err := next(ctx, call)
			trace = append(trace, "<"+name+":"+tools.ErrorCode(err))
			return res, err
		}
	}
	r := tools.NewRegistry(&tools.Options{Interceptors: []tools.Interceptor{mk("outer"), mk("inner")}})
	r.MustAdd(tools.Tool{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object","required":["x"]}`), Handler: okHandler})
	ctx := tools.WithRequest(context.Background(), tools.Request{Channel: "mcp"})
	_, _ = r.Call(ctx, "t", json.RawMessage(`{}`))
	want := []string{"outer>mcp", "inner>mcp", "<inner:invalid_arguments", "<outer:invalid_arguments"}
	if diff := cmp.Diff(want, trace); diff != "" {
		t.Fatalf("trace (-want +got):\n%s", diff)
	}
}

func TestArgumentsAreCanonical(t *testing.T) {
	var got []string
	r := tools.NewRegistry(nil)
	r.MustAdd(tools.Tool{Name: "t", Description: "d",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Handler: func(_ context.Context, args json.RawMessage) (*tools.Result, error) {
			got = append(got, string(args))
			var in struct{ N int }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			return tools.TextResult("ok"), nil
		}})
	for _, args := range []string{`{"n":1.0,"b":[2.50,3e0],"a":{"z":1,"y":1E2}}`, `{"n":1,"n":2}`, `{"n":12345678901234567890123.0}`} {
		if _, err := r.Call(context.Background(), "t", json.RawMessage(args)); err != nil && !strings.Contains(args, "123456") {
			t.Fatalf("%s: %v", args, err)
		}
	}
	want := []string{`{"a":{"y":100,"z":1},"b":[2.50,3],"n":1}`, `{"n":2}`}
	if diff := cmp.Diff(want, got[:2]); diff != "" {
		t.Fatalf("arguments (-want +got):\n%s", diff)
	}
	for _, bad := range []string{`{"n":1} {}`, `{"n":1}x`, `[]`, `"s"`} {
		if _, err := r.Call(context.Background(), "t", json.RawMessage(bad)); tools.ErrorCode(err) != tools.CodeMalformedRequest {
			t.Fatalf("%s: %v, want malformed_request", bad, err)
		}
	}
}

// TestArgumentsRefuseNULAndHugeNumbers: strings PostgreSQL cannot store and numbers
// whose exact arithmetic would cost more than a call are refused with their pointers,
// before the schema or the handler sees them.
func TestArgumentsRefuseNULAndHugeNumbers(t *testing.T) {
	calls := 0
	r := tools.NewRegistry(nil)
	r.MustAdd(tools.Tool{Name: "t", Description: "d",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(_ context.Context, _ json.RawMessage) (*tools.Result, error) {
			calls++
			return tools.TextResult("ok"), nil
		}})
	long := strings.Repeat("9", 65)
	for _, tc := range []struct {
		args     string
		pointers []string
	}{
		{`{"query":"a\u0000b"}`, []string{"/query"}},
		{`{"a":{"b/c":["x","\u0000"]}}`, []string{"/a/b~1c/1"}},
		{`{"k\u0000":1}`, []string{""}},
		{`{"limit":1e999999}`, []string{"/limit"}},
		{`{"limit":-1E-401}`, []string{"/limit"}},
		{`{"limit":1e+401}`, []string{"/limit"}},
		{`{"limit":` + long + `}`, []string{"/limit"}},
		{`{"a":1e99999999999999999999999}`, []string{"/a"}},
	} {
		_, err := r.Call(context.Background(), "t", json.RawMessage(tc.args))
		var e *tools.Error
		if !errors.As(err, &e) || e.Code != tools.CodeInvalidArguments {
			t.Fatalf("%s: %v, want invalid_arguments", tc.args, err)
		}
		var got []string
		for _, d := range e.Details {
			got = append(got, d.Pointer)
		}
		if diff := cmp.Diff(tc.pointers, got); diff != "" {
			t.Errorf("%s: pointers (-want +got):\n%s", tc.args, diff)
		}
	}
	if calls != 0 {
		t.Fatalf("the handler ran %d times", calls)
	}
	for _, ok := range []string{`{"limit":1e400}`, `{"limit":-1.5e-400}`, `{"q":"no nul here \\u0000 as text"}`, `{"n":` + long[:64] + `}`} {
		if _, err := r.Call(context.Background(), "t", json.RawMessage(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestTruncate cuts at a character boundary: an error message quoting a long input never
// carries half a character.
func TestTruncate(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"abc", "abc"},
		{"äöüß", "ä…"}, // 8 bytes cut at 3: the second character would be split
		{"abcdef", "abc…"},
		{"😀😀", "…"}, // 8 bytes cut at 3: no whole character fits
	} {
		if got := tools.Truncate(tc.in, 3); got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, 3) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
