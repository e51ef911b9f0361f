package sitesearch_test

import (
	"context"
	"os"
	"sync/atomic"
	"time"

	"github.com/sitetools/sitetools/internal/llm"
)

// semanticURLVar names the base URL of an OpenAI-compatible server of the Universal
// Sentence Encoder lite (bench/semantic/server.js, e.g. http://127.0.0.1:PORT/v1). When it
// is set, TestRelevanceByKind also asks its questions through that real sentence model;
// `make bench-semantic` starts the server and sets it.
const semanticURLVar = "SITETOOLS_SEMANTIC_EMBEDDINGS_URL"

// externalEmbeddings is an OpenAI-compatible provider outside the test.
type externalEmbeddings struct {
	baseURL    string
	model      string
	dimensions int
}

// semanticVariants are the variants with a real sentence model, when semanticURLVar is set:
// the query embedded as asked, and with its synonyms and corrections appended. They are
// measurements: reported, not held to a floor (the model is English-only and not ours).
func semanticVariants() []relevanceVariant {
	url := os.Getenv(semanticURLVar)
	if url == "" {
		return nil
	}
	use := &externalEmbeddings{baseURL: url, model: "universal-sentence-encoder-lite", dimensions: 512}
	const synonyms = "../../deploy/demo/synonyms.txt"
	return []relevanceVariant{
		{name: "use+synonyms", measurement: true,
			desc: "a real sentence model, the Universal Sentence Encoder lite (English, 512 dimensions; bench/semantic), with the demo's synonyms: the query embedded as asked",
			opts: envOptions{embeddings: use, synonyms: synonyms, timeout: 30 * time.Second}},
		{name: "use+synonyms, expanded", measurement: true,
			desc: "the same with synonyms and corrections appended to the embedded query",
			opts: envOptions{embeddings: use, synonyms: synonyms, timeout: 30 * time.Second, lexical: true}},
	}
}

// newExternalEmbedder embeds with x, counting what it is asked for. It never retries, so
// every call is one request to the provider.
func newExternalEmbedder(x *externalEmbeddings, o llm.OpenAIOptions) (*countingEmbedder, error) {
	o.BaseURL, o.Model, o.Dimensions = x.baseURL, x.model, x.dimensions
	o.Timeout, o.MaxRetries = 2*time.Minute, -1
	inner, err := llm.NewOpenAI(o)
	if err != nil {
		return nil, err
	}
	return &countingEmbedder{Embedder: inner}, nil
}

// countingEmbedder counts the calls and the provider-reported tokens of an embedder
// outside the test, as the fake provider counts its own.
type countingEmbedder struct {
	llm.Embedder
	calls, tokens atomic.Int64
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) (*llm.Embeddings, error) {
	c.calls.Add(1)
	out, err := c.Embedder.Embed(ctx, texts)
	if out != nil {
		c.tokens.Add(int64(out.Tokens))
	}
	return out, err
}

// providerUsage is what the provider has been asked for so far: calls and tokens, and
// false without a provider (the local embedder).
func (e *searchEnv) providerUsage() (calls, tokens int, ok bool) {
	switch {
	case e.fake != nil:
		return e.fake.Calls(), e.fake.Tokens(), true
	case e.external != nil:
		return int(e.external.calls.Load()), int(e.external.tokens.Load()), true
	}
	return 0, 0, false
}
