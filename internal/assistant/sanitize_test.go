package assistant_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/internal/assistant"
)

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

func viaJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

func sanitized(t *testing.T, v any, opts assistant.SanitizeOptions) any {
	t.Helper()
	raw := assistant.Sanitize(v, opts)
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("not JSON: %v: %s", err, raw)
	}
	return out
}

func TestSanitize(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString(randomBytes(3000))
	mime := ""
	for i := 0; i < len(b64); i += 76 {
		mime += b64[i:min(i+76, len(b64))] + "\r\n"
	}
	for _, tc := range []struct {
		name string
		in   any
		opts assistant.SanitizeOptions
		want any
	}{
		{name: "small values unchanged", in: map[string]any{"a": "x", "b": 1.5, "c": true, "d": nil, "e": []any{"y"}},
			want: map[string]any{"a": "x", "b": 1.5, "c": true, "d": nil, "e": []any{"y"}}},
		{name: "long string truncated with a marker", in: strings.Repeat("word ", 10), opts: assistant.SanitizeOptions{MaxStringChars: 12},
			want: "word word wo…[truncated 38 chars]"},
		{name: "characters, not bytes", in: strings.Repeat("ü", 20), opts: assistant.SanitizeOptions{MaxStringChars: 10},
			want: strings.Repeat("ü", 10) + "…[truncated 10 chars]"},
		{name: "base64 summarised", in: map[string]any{"blob": b64}, want: map[string]any{"blob": "[binary data omitted: 3.9 KB base64]"}},
		{name: "MIME base64 with line breaks", in: mime, want: fmt.Sprintf("[binary data omitted: %.1f KB base64]", float64(len(mime))/1024)},
		{name: "data URI", in: "data:image/png;base64," + b64, want: fmt.Sprintf("[binary data omitted: %.1f KB base64 image/png]", float64(len(b64)+22)/1024)},
		// JSON has no bytes: invalid UTF-8 arrives as U+FFFD, three bytes each.
		{name: "raw binary", in: string(randomBytes(1000)), want: fmt.Sprintf("[binary data omitted: %.1f KB binary]", float64(len(viaJSON(string(randomBytes(1000)))))/1024)},
		{name: "hex", in: fmt.Sprintf("%x", randomBytes(200)), want: "[binary data omitted: 400 B hex]"},
		{name: "short base64-looking id kept", in: "AbC123xyz", want: "AbC123xyz"},
		{name: "long prose is not base64", in: strings.Repeat("Accessibility audits for public bodies. ", 10),
			want: strings.Repeat("Accessibility audits for public bodies. ", 10)},
		{name: "a long run of one letter is text", in: strings.Repeat("a", 300), opts: assistant.SanitizeOptions{MaxStringChars: 5},
			want: "aaaaa…[truncated 295 chars]"},
		{name: "array capped with a marker element", in: []any{1, 2, 3, 4, 5}, opts: assistant.SanitizeOptions{MaxItems: 2},
			want: []any{1.0, 2.0, "…[3 more items omitted]"}},
		{name: "object fields capped", in: map[string]any{"a": 1, "b": 2, "c": 3}, opts: assistant.SanitizeOptions{MaxItems: 2},
			want: map[string]any{"a": 1.0, "b": 2.0, "…": "[1 more fields omitted]"}},
		{name: "deep nesting summarised", in: map[string]any{"a": map[string]any{"b": []any{1, 2}}}, opts: assistant.SanitizeOptions{MaxDepth: 2},
			want: map[string]any{"a": map[string]any{"b": "[nested data omitted: a list of 2 items]"}}},
		{name: "recursive into arrays of objects", in: []any{map[string]any{"s": strings.Repeat("x", 30)}}, opts: assistant.SanitizeOptions{MaxStringChars: 4},
			want: []any{map[string]any{"s": "xxxx…[truncated 26 chars]"}}},
		{name: "raw JSON input", in: json.RawMessage(`{"n": 12345678901234567890}`), want: map[string]any{"n": 12345678901234567890.0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, sanitized(t, tc.in, tc.opts)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Numbers keep their exact digits.
func TestSanitizeKeepsNumbers(t *testing.T) {
	got := string(assistant.Sanitize(json.RawMessage(`{"n":12345678901234567890,"f":0.1}`), assistant.SanitizeOptions{}))
	if got != `{"f":0.1,"n":12345678901234567890}` {
		t.Errorf("got %s", got)
	}
}

// TestSanitize2MB: a 2 MB result of every kind of bulk comes out below the cap, valid
// JSON, with markers saying what was left out.
func TestSanitize2MB(t *testing.T) {
	items := make([]any, 20000)
	for i := range items {
		items[i] = map[string]any{"id": i, "name": fmt.Sprintf("slot %d", i), "note": strings.Repeat("n", 200)}
	}
	huge := map[string]any{
		"attachment": base64.StdEncoding.EncodeToString(randomBytes(1 << 20)),
		"text":       strings.Repeat("Our audits check forms, contrast and alt texts. ", 12000),
		"items":      items,
	}
	raw, _ := json.Marshal(huge)
	if len(raw) < 2<<20 {
		t.Fatalf("the input is only %d bytes", len(raw))
	}
	out := assistant.Sanitize(huge, assistant.SanitizeOptions{})
	if len(out) > 16<<10 {
		t.Fatalf("%d bytes, over 16 KiB", len(out))
	}
	if !json.Valid(out) {
		t.Fatal("not JSON")
	}
	for _, want := range []string{"[binary data omitted: 1.3 MB base64]", "…[truncated ", "more items omitted]"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in %.400s", want, out)
		}
	}
}

// Many small fields at every level still fit: the limits shrink until they do.
func TestSanitizeShrinksToFit(t *testing.T) {
	wide := map[string]any{}
	for i := range 50 {
		inner := map[string]any{}
		for j := range 50 {
			inner[fmt.Sprintf("field%02d", j)] = strings.Repeat("v", 100)
		}
		wide[fmt.Sprintf("group%02d", i)] = inner
	}
	for _, limit := range []int{16 << 10, 2 << 10, 300} {
		out := assistant.Sanitize(wide, assistant.SanitizeOptions{MaxBytes: limit})
		if len(out) > limit || !json.Valid(out) {
			t.Errorf("limit %d: %d bytes: %.200s", limit, len(out), out)
		}
	}
}
