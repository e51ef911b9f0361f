package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzCallBody feeds arbitrary bytes to POST /api/chat/tools: never a 5xx, never a
// panic, always one of the two documented body shapes.
func FuzzCallBody(f *testing.F) {
	for _, seed := range []string{
		`{"name":"echo","arguments":{"text":"a","count":2}}`,
		`{"name":"echo","arguments":{"text":7,"count":"x"}}`,
		`{"name":"counter.add","arguments":{"n":1}}`,
		`{"name":"range.check"}`,
		`{"name":"nope","arguments":null}`,
		`[]`, `null`, `"x"`, `{"name":{}}`, `{"name":"echo","arguments":{"text":"\u0000\ud800"}}`,
		`{"name":"echo","arguments":{"text":"a","count":1e400}}`,
		`{"name":"echo","name":"counter.add","arguments":{"n":1}}`,
		`{"name":"echo","arguments":{"text":"a\u0000b"}}`,
		`{"name":"echo","arguments":{"text\u0000":"a"}}`,
		`{"name":"echo","arguments":{"text":"a","count":1e999999}}`,
		`{"name":"echo","arguments":{"text":"a","count":-1E-99999999999999999999}}`,
		`{"name":"echo","arguments":{"text":"a","count":99999999999999999999999999999999999999999999999999999999999999999}}`,
		`{"name":"echo","arguments":{"text":".\u0301,\u0301.\u0301,\u0301.\u0301,\u0301.\u0301,\u0301"}}`,
	} {
		f.Add([]byte(seed))
	}
	handler := newEnv(f, nil).App.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/api/chat/tools", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "fuzz")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body.Bytes())
		}
		var shape struct {
			Error   *struct{ Code, Message string } `json:"error"`
			Content []struct{ Type, Text string }   `json:"content"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &shape); err != nil {
			t.Fatalf("status %d, body not JSON: %s", rec.Code, rec.Body.Bytes())
		}
		if (rec.Code == 200) != (shape.Error == nil && shape.Content != nil) {
			t.Fatalf("status %d with body %s", rec.Code, rec.Body.Bytes())
		}
	})
}
