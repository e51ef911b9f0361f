package llm

import (
	"errors"
	"net/url"
	"strings"
)

// endpoint is a client's base URL and the name the configuration gives it, for the hint
// a 404 gets: a base URL without its /v1 is the commonest mistake in setting up an
// OpenAI-compatible provider (Ollama, vLLM, llama.cpp and LiteLLM serve the API under
// /v1), and the provider's bare 404 does not say so.
type endpoint struct {
	base    string // scheme, host and path of the base URL, without a trailing slash
	v1      bool   // its path ends in /v1
	setting string // e.g. "EMBEDDINGS_BASE_URL"; "" when not known
}

func newEndpoint(u *url.URL, setting string) endpoint {
	// Neither credentials nor a query string of the URL go into an error.
	path := strings.TrimRight(u.Path, "/")
	return endpoint{base: u.Scheme + "://" + u.Host + path, v1: strings.HasSuffix(path, "/v1"), setting: setting}
}

// explain returns err with a hint where it is the provider's 404 for path (e.g.
// "/embeddings") under a base URL that does not end in /v1; otherwise err as it is. A
// 404 for a model the provider does not have (OpenAI's model_not_found) gets none.
func (e endpoint) explain(err error, path string) error {
	var se *StatusError
	if e.v1 || e.base == "" || !errors.As(err, &se) || se.StatusCode != 404 || se.Code == "model_not_found" {
		return err
	}
	try := "the base URL " + e.base + "/v1"
	if e.setting != "" {
		try = e.setting + "=" + e.base + "/v1"
	}
	return &hintError{err: err, hint: "the provider has no " + e.base + path +
		": OpenAI-compatible servers usually serve it under /v1, try " + try}
}

// hintError is an error with a hint of what to change.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() + "; " + e.hint }
func (e *hintError) Unwrap() error { return e.err }
