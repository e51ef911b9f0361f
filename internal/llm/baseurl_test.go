package llm_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
)

// bareServer serves only POST /v1/embeddings, as Ollama does: every other path gets Go's
// plain "404 page not found", no JSON.
func bareServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1,0]}],"usage":{"prompt_tokens":1,"total_tokens":1}}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestBaseURLWithoutV1: a provider that answers 404 under a base URL that does not end
// in /v1 gets an error that names the URL it lacks and the setting to try, with /v1; the
// URL it suggests works. The 404 stays a 404 (not a provider failure), and a base URL
// that ends in /v1, or a 404 for an unknown model, gets no hint.
func TestBaseURLWithoutV1(t *testing.T) {
	fake := llmtest.NewServer(t, 16)
	bare := bareServer(t)
	for _, tc := range []struct {
		name, base, want string // want: the suggested base URL; "" for no hint
	}{
		{name: "fake provider, host only", base: fake.URL, want: fake.URL + "/v1"},
		{name: "bare 404, trailing slash", base: bare.URL + "/", want: bare.URL + "/v1"},
		{name: "credentials left out", base: strings.Replace(bare.URL, "http://", "http://user:s3cret@", 1), want: bare.URL + "/v1"},
		{name: "ends in /v1", base: bare.URL + "/api/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: tc.base, BaseURLSetting: "EMBEDDINGS_BASE_URL", Model: "m", MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			_, err = o.Embed(context.Background(), []string{"opening hours"})
			var se *llm.StatusError
			if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || llm.ProviderFailure(err) || llm.IsUnavailable(err) {
				t.Fatalf("error %v, want a 404 that is no provider failure", err)
			}
			t.Log(err)
			hint := "try EMBEDDINGS_BASE_URL=" + tc.want
			switch {
			case tc.want == "" && strings.Contains(err.Error(), "try "):
				t.Errorf("a hint under a base URL that ends in /v1: %v", err)
			case tc.want != "" && (!strings.Contains(err.Error(), hint) || !strings.Contains(err.Error(), "/embeddings")):
				t.Errorf("error %q does not name the path and say %q", err, hint)
			case strings.Contains(err.Error(), "s3cret"):
				t.Errorf("the error shows the base URL's password: %v", err)
			}
			if tc.want == "" {
				return
			}
			o, err = llm.NewOpenAI(llm.OpenAIOptions{BaseURL: tc.want, Model: "m", MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := o.Embed(context.Background(), []string{"opening hours"}); err != nil {
				t.Errorf("the suggested base URL %s: %v", tc.want, err)
			}
		})
	}

	// OpenAI answers 404 for a model it does not have: no hint about /v1 there.
	notFound := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"message":"The model does not exist","type":"invalid_request_error","code":"model_not_found"}}`))
	}))
	defer notFound.Close()
	o, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: notFound.URL, BaseURLSetting: "EMBEDDINGS_BASE_URL", Model: "m", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Embed(context.Background(), []string{"x"}); err == nil || strings.Contains(err.Error(), "/v1") {
		t.Errorf("model not found: %v, want a 404 without a hint about /v1", err)
	}
}

// TestChatBaseURLWithoutV1: the chat client gives the same hint for /chat/completions.
func TestChatBaseURLWithoutV1(t *testing.T) {
	srv := llmtest.NewChatServer(t)
	c, err := llm.NewChat(llm.ChatOptions{BaseURL: srv.URL, BaseURLSetting: "LLM_BASE_URL", Model: "m", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	err = chatOnce(context.Background(), c, noDelta)
	var se *llm.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound ||
		!strings.Contains(err.Error(), srv.URL+"/chat/completions") || !strings.Contains(err.Error(), "try LLM_BASE_URL="+srv.URL+"/v1") {
		t.Fatalf("error %v, want a 404 that names /chat/completions and says to try LLM_BASE_URL=%s/v1", err, srv.URL)
	}
	c, err = llm.NewChat(llm.ChatOptions{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := chatOnce(context.Background(), c, noDelta); err != nil {
		t.Errorf("the suggested base URL: %v", err)
	}
}
