package assistant

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClassifyReply(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want replyKind
	}{
		{"", replyUndecided},
		{"  \n", replyUndecided},
		{"{", replyRequest},
		{` {"tool"`, replyRequest},
		{"[", replyUndecided},
		{"[ ", replyUndecided},
		{"[{", replyRequest},
		{"[\n  {", replyRequest},
		{"[]", replyRequest},
		{"[1] see the page", replyText},
		{"`", replyUndecided},
		{"``", replyUndecided},
		{"```", replyUndecided},
		{"```js", replyUndecided},
		{"```json", replyUndecided},
		{"```json\n", replyUndecided},
		{"```json\n{", replyRequest},
		{"```\n[{", replyRequest},
		{"```python\nprint()", replyText},
		{"```json\nnot json", replyText},
		{"`code` is", replyText},
		{"We offer", replyText},
		{"Hello {name}", replyText},
	} {
		if got := classifyReply(tc.in); got != tc.want {
			t.Errorf("classifyReply(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestParseToolRequests(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []toolRequest
		wantErr string
	}{
		{in: `{"tool":"search_site","args":{"query":"x"}}`, want: []toolRequest{{"search_site", json.RawMessage(`{"query":"x"}`)}}},
		{in: "```json\n[{\"tool\":\"a\",\"args\":{}}, {\"tool\":\"b\"}]\n```", want: []toolRequest{{"a", json.RawMessage(`{}`)}, {"b", json.RawMessage(`{}`)}}},
		{in: `{"name":"a","arguments":{"k":1}}`, want: []toolRequest{{"a", json.RawMessage(`{"k":1}`)}}},
		{in: `{"tool":"a","args":null}`, want: []toolRequest{{"a", json.RawMessage(`{}`)}}},
		{in: `{"tool":"a","args":`, wantErr: "not valid JSON"},
		{in: `{"tool":"a"} and more`, wantErr: "text after the JSON"},
		{in: `{"args":{}}`, wantErr: `needs "tool"`},
		{in: `{"tool":7}`, wantErr: `needs "tool"`},
		{in: `{"tool":"a","args":[1]}`, wantErr: `"args" must be a JSON object`},
		{in: `[]`, wantErr: "empty"},
		{in: `[1]`, wantErr: "not a JSON object"},
		{in: "[" + strings.Repeat(`{"tool":"a"},`, 8) + `{"tool":"a"}]`, wantErr: "at most 8"},
	} {
		got, err := parseToolRequests(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseToolRequests(%q): error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseToolRequests(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("parseToolRequests(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}
