package llmtest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
)

type wireResponse struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Usage *struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

func post(t *testing.T, url string, body any) (int, http.Header, wireResponse) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out wireResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("response is not JSON: %v", err)
	}
	return resp.StatusCode, resp.Header, out
}

func localVector(t *testing.T, dims int, text string) []float32 {
	t.Helper()
	l, err := llm.NewLocal(dims)
	if err != nil {
		t.Fatal(err)
	}
	e, err := l.Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	return e.Vectors[0]
}

func TestServerWireFormat(t *testing.T) {
	for _, tc := range []struct {
		name       string
		body       map[string]any
		wantStatus int
		wantInputs int // logged per request
		wantDims   int // of each vector, if 200
		wantTexts  []string
	}{
		{
			name:       "string input",
			body:       map[string]any{"model": "m", "input": "privacy policy"},
			wantStatus: 200, wantInputs: 1, wantDims: 32, wantTexts: []string{"privacy policy"},
		},
		{
			name:       "array input with dimensions",
			body:       map[string]any{"model": "m", "input": []string{"a day rate", "the imprint"}, "dimensions": 64},
			wantStatus: 200, wantInputs: 2, wantDims: 64, wantTexts: []string{"a day rate", "the imprint"},
		},
		{
			name:       "base64",
			body:       map[string]any{"model": "m", "input": []string{"cookies"}, "encoding_format": "base64"},
			wantStatus: 200, wantInputs: 1, wantDims: 32, wantTexts: []string{"cookies"},
		},
		{name: "no model", body: map[string]any{"input": "x"}, wantStatus: 400, wantInputs: 1},
		{name: "token input", body: map[string]any{"model": "m", "input": [][]int{{1, 2}}}, wantStatus: 400, wantInputs: 1},
		{name: "empty string", body: map[string]any{"model": "m", "input": []string{"ok", ""}}, wantStatus: 400, wantInputs: 2},
		{name: "no input", body: map[string]any{"model": "m", "input": []string{}}, wantStatus: 400, wantInputs: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, 32)
			status, _, resp := post(t, srv.BaseURL()+"/embeddings", tc.body)
			if status != tc.wantStatus {
				t.Fatalf("status %d, want %d", status, tc.wantStatus)
			}
			if diff := cmp.Diff([]int{tc.wantInputs}, srv.Requests()); diff != "" {
				t.Errorf("requests log (-want +got):\n%s", diff)
			}
			if srv.Calls() != 1 {
				t.Errorf("calls %d, want 1", srv.Calls())
			}
			if status != 200 {
				if resp.Error == nil || resp.Error.Message == "" || resp.Error.Type == "" {
					t.Errorf("error body %+v lacks OpenAI's error shape", resp.Error)
				}
				if srv.Tokens() != 0 || srv.Inputs() != 0 {
					t.Errorf("a rejected request was billed: %d tokens, %d inputs", srv.Tokens(), srv.Inputs())
				}
				return
			}
			if resp.Object != "list" || resp.Model != "m" || len(resp.Data) != len(tc.wantTexts) {
				t.Fatalf("response %+v: want object list, model m, %d embeddings", resp, len(tc.wantTexts))
			}
			wantTokens := 0
			for i, text := range tc.wantTexts {
				wantTokens += llm.CountTokens(text)
				d := resp.Data[i]
				if d.Object != "embedding" || d.Index != i {
					t.Errorf("data[%d]: object %q index %d", i, d.Object, d.Index)
				}
				var got []float32
				if tc.body["encoding_format"] == "base64" {
					var s string
					if err := json.Unmarshal(d.Embedding, &s); err != nil {
						t.Fatalf("base64 embedding is not a string: %v", err)
					}
					raw, err := base64.StdEncoding.DecodeString(s)
					if err != nil {
						t.Fatal(err)
					}
					for j := 0; j+4 <= len(raw); j += 4 {
						got = append(got, math.Float32frombits(binary.LittleEndian.Uint32(raw[j:])))
					}
				} else if err := json.Unmarshal(d.Embedding, &got); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(localVector(t, tc.wantDims, text), got); diff != "" {
					t.Errorf("data[%d] is not the local embedding of its input (-want +got):\n%s", i, diff)
				}
			}
			if resp.Usage == nil || resp.Usage.PromptTokens != wantTokens || resp.Usage.TotalTokens != wantTokens {
				t.Errorf("usage %+v, want %d prompt and total tokens", resp.Usage, wantTokens)
			}
			if srv.Tokens() != wantTokens || srv.Inputs() != len(tc.wantTexts) {
				t.Errorf("counted %d tokens and %d inputs, want %d and %d",
					srv.Tokens(), srv.Inputs(), wantTokens, len(tc.wantTexts))
			}
		})
	}
}

func TestServerKnobs(t *testing.T) {
	body := map[string]any{"model": "m", "input": []string{"one", "two"}}
	for _, tc := range []struct {
		name   string
		setup  func(*llmtest.Server)
		want   []int // statuses of three calls in a row
		header string
	}{
		{name: "none", setup: func(*llmtest.Server) {}, want: []int{200, 200, 200}},
		{name: "fail", setup: func(s *llmtest.Server) { s.SetFail(503) }, want: []int{503, 503, 503}},
		{name: "fail first", setup: func(s *llmtest.Server) { s.SetFailFirst(2, 500) }, want: []int{500, 500, 200}},
		{
			name:   "retry after",
			setup:  func(s *llmtest.Server) { s.SetFailFirst(1, 429); s.SetRetryAfter(1500 * time.Millisecond) },
			want:   []int{429, 200, 200},
			header: "2/1500",
		},
		{name: "api key", setup: func(s *llmtest.Server) { s.SetAPIKey("sk-test") }, want: []int{401, 401, 401}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, 32)
			tc.setup(srv)
			var got []int
			for range tc.want {
				status, h, _ := post(t, srv.BaseURL()+"/embeddings", body)
				got = append(got, status)
				if status == 429 {
					if hv := h.Get("Retry-After") + "/" + h.Get("Retry-After-Ms"); hv != tc.header {
						t.Errorf("Retry-After/Retry-After-Ms = %q, want %q", hv, tc.header)
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if srv.Calls() != len(tc.want) {
				t.Errorf("calls %d, want %d", srv.Calls(), len(tc.want))
			}
			ok := 0
			for _, s := range got {
				if s == 200 {
					ok++
				}
			}
			if srv.Inputs() != 2*ok {
				t.Errorf("inputs %d, want %d: only answered requests count", srv.Inputs(), 2*ok)
			}
			if diff := cmp.Diff([]int{2, 2, 2}, srv.Requests()); diff != "" {
				t.Errorf("requests log (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServerResetFail(t *testing.T) {
	srv := llmtest.NewServer(t, 32)
	srv.SetFail(500)
	body := map[string]any{"model": "m", "input": "x"}
	if status, _, _ := post(t, srv.BaseURL()+"/embeddings", body); status != 500 {
		t.Fatalf("status %d while failing, want 500", status)
	}
	srv.SetFail(0)
	if status, _, _ := post(t, srv.BaseURL()+"/embeddings", body); status != 200 {
		t.Fatalf("status %d after reset, want 200", status)
	}
}

func TestServerUnknownRoute(t *testing.T) {
	srv := llmtest.NewServer(t, 32)
	status, _, resp := post(t, srv.BaseURL()+"/completions", map[string]any{"model": "m"})
	if status != http.StatusNotFound || resp.Error == nil {
		t.Errorf("status %d, error %+v: want 404 with an OpenAI error body", status, resp.Error)
	}
	if srv.Calls() != 1 || len(srv.Requests()) != 0 {
		t.Errorf("calls %d, requests %v: want the call counted and no embeddings request logged", srv.Calls(), srv.Requests())
	}
}
